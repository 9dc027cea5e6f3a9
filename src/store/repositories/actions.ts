import type { Db } from "../database.js";
import type { ReadCache } from "../read-cache.js";
import type { ActionRecord } from "../records.js";
import { orUndefined } from "../records.js";
import type { ActionStatus } from "../../domain/status.js";

/** A row as SQLite returns it: JSON as text, booleans as 0/1, absent values as NULL. */
type ActionRow = {
  [K in Exclude<keyof ActionRecord, "params" | "result" | "held">]: undefined extends ActionRecord[K] ? Exclude<ActionRecord[K], undefined> | null : ActionRecord[K];
} & { params: string; result: string | null; held: number };

function toAction(row: ActionRow): ActionRecord {
  const result = orUndefined(row.result);
  return {
    ...row,
    params: JSON.parse(row.params) as Record<string, unknown>,
    result: result === undefined ? undefined : (JSON.parse(result) as Record<string, unknown>),
    held: row.held === 1,
    error_code: orUndefined(row.error_code),
    error_message: orUndefined(row.error_message),
    runner_id: orUndefined(row.runner_id),
    committed_at: orUndefined(row.committed_at),
    finished_at: orUndefined(row.finished_at),
  };
}

export interface ActionFilter {
  workspaceId: string;
  accountIds?: readonly string[] | undefined;
  accountId?: string | undefined;
  status?: ActionStatus | undefined;
  /** Only actions older than this sequence number (cursor pagination, newest first). */
  beforeSeq?: number | undefined;
  limit: number;
}

export class ActionRepository {
  constructor(
    private readonly db: Db,
    private readonly cache: ReadCache,
  ) {}

  insert(action: Omit<ActionRecord, "seq">): void {
    this.db
      .prepare(
        `INSERT INTO actions (id, workspace_id, account_id, platform, type, params, status, error_code, error_message,
           result, price, cost, held, runner_id, committed_at, created_at, updated_at, finished_at)
         VALUES (@id, @workspace_id, @account_id, @platform, @type, @params, @status, @error_code, @error_message,
           @result, @price, @cost, @held, @runner_id, @committed_at, @created_at, @updated_at, @finished_at)`,
      )
      .run({
        ...action,
        params: JSON.stringify(action.params),
        result: action.result ? JSON.stringify(action.result) : null,
        held: action.held ? 1 : 0,
        error_code: action.error_code ?? null,
        error_message: action.error_message ?? null,
        runner_id: action.runner_id ?? null,
        committed_at: action.committed_at ?? null,
        finished_at: action.finished_at ?? null,
      });
  }

  /** Kept until the database changes: a client polling an action reads it once per change. */
  get(id: string): ActionRecord | undefined {
    return this.cache.get(`action:${id}`, () => {
      const row = this.db.prepare("SELECT * FROM actions WHERE id = ?").get(id) as ActionRow | undefined;
      return row && toAction(row);
    });
  }

  list(filter: ActionFilter): ActionRecord[] {
    const where = ["workspace_id = @workspaceId"];
    if (filter.accountId !== undefined) where.push("account_id = @accountId");
    if (filter.status !== undefined) where.push("status = @status");
    if (filter.beforeSeq !== undefined) where.push("seq < @beforeSeq");
    if (filter.accountIds !== undefined) where.push("account_id IN (SELECT value FROM json_each(@accountIds))");
    const rows = this.db
      .prepare(`SELECT * FROM actions WHERE ${where.join(" AND ")} ORDER BY seq DESC LIMIT @limit`)
      .all({
        workspaceId: filter.workspaceId,
        accountId: filter.accountId ?? null,
        status: filter.status ?? null,
        beforeSeq: filter.beforeSeq ?? null,
        accountIds: filter.accountIds ? JSON.stringify(filter.accountIds) : null,
        limit: filter.limit,
      }) as ActionRow[];
    return rows.map(toAction);
  }

  withStatus(statuses: readonly ActionStatus[]): ActionRecord[] {
    const rows = this.db
      .prepare("SELECT * FROM actions WHERE status IN (SELECT value FROM json_each(?)) ORDER BY seq")
      .all(JSON.stringify(statuses)) as ActionRow[];
    return rows.map(toAction);
  }

  /** The oldest queued action of every account that has no action running or waiting for input. */
  claimable(): ActionRecord[] {
    const rows = this.db
      .prepare(
        `SELECT a.* FROM actions a
         WHERE a.status = 'queued'
           AND a.seq = (SELECT min(seq) FROM actions q WHERE q.account_id = a.account_id AND q.status = 'queued')
           AND NOT EXISTS (SELECT 1 FROM actions b WHERE b.account_id = a.account_id AND b.status IN ('running', 'needs_input'))
         ORDER BY a.seq`,
      )
      .all() as ActionRow[];
    return rows.map(toAction);
  }

  /**
   * Actions running or waiting whose runner's lease is no longer live (or who have none):
   * the process that held them is gone, and they are to be recovered.
   */
  orphaned(now: string): ActionRecord[] {
    const rows = this.db
      .prepare(
        `SELECT * FROM actions WHERE status IN ('running', 'needs_input')
           AND (runner_id IS NULL OR runner_id NOT IN (SELECT id FROM runners WHERE lease_expires_at > ?))
         ORDER BY seq`,
      )
      .all(now) as ActionRow[];
    return rows.map(toAction);
  }

  /** The statuses of some actions, by id (a runner checking on the actions it holds). */
  statuses(ids: readonly string[]): Map<string, ActionStatus> {
    const rows = this.db.prepare("SELECT id, status FROM actions WHERE id IN (SELECT value FROM json_each(?))").all(JSON.stringify(ids)) as {
      id: string;
      status: ActionStatus;
    }[];
    return new Map(rows.map((row) => [row.id, row.status]));
  }

  /** What a queued action waits behind on its account: the action running or paused there, else an older queued one. */
  aheadOf(action: { id: string; account_id: string; seq: number }): ActionRecord | undefined {
    const row = this.db
      .prepare(
        `SELECT * FROM actions WHERE account_id = ? AND id != ?
           AND (status IN ('running', 'needs_input') OR (status = 'queued' AND seq < ?))
         ORDER BY CASE WHEN status = 'queued' THEN 1 ELSE 0 END, seq LIMIT 1`,
      )
      .get(action.account_id, action.id, action.seq) as ActionRow | undefined;
    return row && toAction(row);
  }

  /** Whether the account has an action running or waiting for input (its browser context is in use). */
  hasActive(accountId: string): boolean {
    return this.db.prepare("SELECT 1 FROM actions WHERE account_id = ? AND status IN ('running', 'needs_input') LIMIT 1").get(accountId) !== undefined;
  }

  /** Writes the changed fields; callers check the transition first. */
  update(id: string, changes: Partial<Pick<ActionRecord, "status" | "error_code" | "error_message" | "result" | "cost" | "held" | "runner_id" | "committed_at" | "finished_at">>, now: string): void {
    const values: Record<string, unknown> = { id, updated_at: now };
    const sets = ["updated_at = @updated_at"];
    for (const [field, value] of Object.entries(changes)) {
      sets.push(`${field} = @${field}`);
      values[field] = field === "result" ? JSON.stringify(value) : field === "held" ? (value ? 1 : 0) : (value ?? null);
    }
    this.db.prepare(`UPDATE actions SET ${sets.join(", ")} WHERE id = @id`).run(values);
  }
}
