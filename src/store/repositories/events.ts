import type { Db } from "../database.js";

export type EventType = "action.updated" | "account.updated";

/** One outbox row: a status change as the public saw it then. */
export interface EventRecord {
  seq: number;
  id: string;
  workspace_id: string;
  type: EventType;
  subject_id: string;
  account_id: string;
  challenge_id: string | undefined;
  data: Record<string, unknown>;
  created_at: string;
}

interface EventRow extends Omit<EventRecord, "data" | "challenge_id"> {
  data: string;
  challenge_id: string | null;
}

const toRecord = (row: EventRow): EventRecord => ({ ...row, challenge_id: row.challenge_id ?? undefined, data: JSON.parse(row.data) as Record<string, unknown> });

/** The event outbox (DESIGN §13): appended in the transaction of the change it records. */
export class EventRepository {
  constructor(private readonly db: Db) {}

  /** Appends an event; returns its `seq` (its place in the workspace's stream). */
  insert(event: Omit<EventRecord, "seq">): number {
    const info = this.db
      .prepare(
        `INSERT INTO events (id, workspace_id, type, subject_id, account_id, challenge_id, data, created_at)
         VALUES (@id, @workspace_id, @type, @subject_id, @account_id, @challenge_id, @data, @created_at)`,
      )
      .run({ ...event, challenge_id: event.challenge_id ?? null, data: JSON.stringify(event.data) });
    return Number(info.lastInsertRowid);
  }

  bySeq(seq: number): EventRecord | undefined {
    const row = this.db.prepare("SELECT * FROM events WHERE seq = ?").get(seq) as EventRow | undefined;
    return row && toRecord(row);
  }

  /** The `seq` of a workspace's event id (to resume after it), if it is still kept. */
  seqOf(workspaceId: string, id: string): number | undefined {
    return this.db.prepare("SELECT seq FROM events WHERE id = ? AND workspace_id = ?").pluck().get(id, workspaceId) as number | undefined;
  }

  /** The newest `seq` of a workspace (0 when it has none). */
  latestSeq(workspaceId: string): number {
    return (this.db.prepare("SELECT coalesce(max(seq), 0) FROM events WHERE workspace_id = ?").pluck().get(workspaceId) as number) ?? 0;
  }

  /** The newest event id of a workspace, if any. */
  latestId(workspaceId: string): string | undefined {
    return this.db.prepare("SELECT id FROM events WHERE workspace_id = ? ORDER BY seq DESC LIMIT 1").pluck().get(workspaceId) as string | undefined;
  }

  /** A workspace's events after `afterSeq`, oldest first, only of these accounts when given. */
  after(workspaceId: string, afterSeq: number, limit: number, accountIds?: readonly string[]): EventRecord[] {
    const rows = this.db
      .prepare(
        `SELECT * FROM events WHERE workspace_id = @workspace_id AND seq > @after
         AND (@accounts IS NULL OR account_id IN (SELECT value FROM json_each(@accounts)))
         ORDER BY seq LIMIT @limit`,
      )
      .all({ workspace_id: workspaceId, after: afterSeq, limit, accounts: accountIds ? JSON.stringify(accountIds) : null }) as EventRow[];
    return rows.map(toRecord);
  }

  /** The newest event's seq in any workspace (0 for none). */
  maxSeq(): number {
    return (this.db.prepare("SELECT coalesce(max(seq), 0) FROM events").pluck().get() as number) ?? 0;
  }

  /** Actions whose change was recorded after `afterSeq`, in any workspace, oldest first, with the newest seq read. */
  actionsChangedAfter(afterSeq: number, limit: number): { seq: number; actionId: string }[] {
    return (this.db.prepare("SELECT seq, subject_id AS actionId FROM events WHERE seq > ? AND type = 'action.updated' ORDER BY seq LIMIT ?").all(afterSeq, limit) as { seq: number; actionId: string }[]);
  }

  /** Drops events older than `before` with no delivery still to make. */
  purgeBefore(before: string): number {
    return this.db
      .prepare("DELETE FROM events WHERE created_at < ? AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = events.seq AND d.state = 'pending')")
      .run(before).changes;
  }
}
