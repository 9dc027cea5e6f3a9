import { CHECK_TYPE } from "../../domain/health.js";
import { TERMINAL_STATUSES, isTerminal, type ActionStatus } from "../../domain/status.js";
import type { Queries } from "../queries.js";
import type { ActionRecord } from "../records.js";
import { orUndefined } from "../records.js";
import type { Schema } from "../schema.js";
import { sql, type AliasableExpression, type Expression, type ExpressionBuilder, type Selectable, type SqlBool } from "kysely";
import { timeIn } from "../database-time.js";
import { liveHoldOn } from "./account-holds.js";

type ActionRow = Selectable<Schema["actions"]>;

function toAction(row: ActionRow): ActionRecord {
  const result = orUndefined(row.result);
  return {
    ...row,
    type: row.type as ActionRecord["type"],
    status: row.status as ActionStatus,
    params: JSON.parse(row.params) as Record<string, unknown>,
    result: result === undefined ? undefined : (JSON.parse(result) as Record<string, unknown>),
    held: row.held === 1,
    error_code: orUndefined(row.error_code) as ActionRecord["error_code"],
    error_message: orUndefined(row.error_message),
    runner_id: orUndefined(row.runner_id),
    committed_at: orUndefined(row.committed_at),
    answered_by: orUndefined(row.answered_by) as ActionRecord["answered_by"],
    finished_at: orUndefined(row.finished_at),
    not_before: orUndefined(row.not_before),
    started_at: orUndefined(row.started_at),
  };
}

export interface ActionFilter {
  workspaceId: string;
  accountIds?: readonly string[] | undefined;
  accountId?: string | undefined;
  status?: ActionStatus | undefined;
  /** Only actions of this type. */
  type?: string | undefined;
  /** Only actions of type `routine` that ran this routine (their params' `routine`). */
  routine?: string | undefined;
  /** Only actions older than this sequence number (cursor pagination, newest first). */
  beforeSeq?: number | undefined;
  limit: number;
}

const ACTIVE = ["running", "needs_input"] as const;

/** A queued action a claim may take, with what its account's pace is judged by. */
export interface ClaimCandidate {
  action: ActionRecord;
  /** The account's pace overrides as stored (JSON), if any. */
  accountPace: string | null;
  /** Until when a cool-down of the action's type was set on the account, if one was. */
  cooledUntil: string | undefined;
}

/** What a claim asks `claimable` (see there). */
export interface ClaimableOptions {
  /** The claiming runner: an account it ran last is warm here. */
  runnerId: string;
  /** Now on the lease clock, which judges runners' leases and sign-in holds. */
  leaseNow: string;
  /** Accounts busy on the claiming runner (running there, or held by its sign-in page). */
  skipAccounts: readonly string[];
  /** Accounts warm in the claiming runner's browser. */
  warmAccounts: readonly string[];
  /** An action queued since this is left to the live runner with a free slot that ran its account last. */
  passOverSince: string;
  /** An action queued before this is taken as if its account were warm here. */
  preferWarmSince: string;
  limit: number;
  lock?: boolean;
}

/** Who creates or claims: a runner, and now on the lease clock (which judges runners' leases). */
export interface Affinity {
  runnerId: string;
  leaseNow: string;
}

/** The runner that ran the account's newest action (health checks left out): its browser holds the account warm. */
function lastRunnerOf<DB extends Schema, TB extends keyof DB>(eb: ExpressionBuilder<DB, TB>, account: Expression<string>) {
  const own = eb as unknown as ExpressionBuilder<Schema, never>;
  return own
    .selectFrom("actions as l")
    .select("l.runner_id")
    .where("l.account_id", "=", account)
    .where("l.runner_id", "is not", null)
    .where("l.type", "!=", CHECK_TYPE)
    .orderBy("l.seq", "desc")
    .limit(1);
}

/**
 * Whether the account is warm on a runner other than `affinity.runnerId` that is live and has a
 * free run slot: that runner takes the account's new action itself, within milliseconds.
 */
function warmOnAnotherRunner<DB extends Schema, TB extends keyof DB>(eb: ExpressionBuilder<DB, TB>, account: Expression<string>, { runnerId, leaseNow }: Affinity): AliasableExpression<SqlBool> {
  const own = eb as unknown as ExpressionBuilder<Schema, never>;
  return own.exists(
    own
      .selectFrom("runners as w")
      .select("w.id")
      .where("w.id", "=", lastRunnerOf(own, account))
      .where("w.id", "!=", runnerId)
      .where("w.lease_expires_at", ">", leaseNow)
      .where("w.free_slots", ">", 0),
  );
}

export class ActionRepository {
  constructor(private readonly q: Queries) {}

  /**
   * Writes a new action and returns it as written. `affinity` (a create): whether its account is
   * warm on another live runner with a free run slot, as `claimable` judges it, read in the same
   * statement — that runner is told (its notification names it, migrations/postgres 015) and takes
   * it, so the creating coordinator need not claim (DESIGN §11, "a coordinator prefers accounts
   * warm in its own browser").
   */
  async insert(action: Omit<ActionRecord, "seq">, affinity?: Affinity): Promise<{ action: ActionRecord; warmElsewhere: boolean }> {
    const row = await this.q.db
      .insertInto("actions")
      .values({
        ...action,
        params: JSON.stringify(action.params),
        result: action.result ? JSON.stringify(action.result) : null,
        held: action.held ? 1 : 0,
        error_code: action.error_code ?? null,
        error_message: action.error_message ?? null,
        runner_id: action.runner_id ?? null,
        committed_at: action.committed_at ?? null,
        answered_by: action.answered_by ?? null,
        finished_at: action.finished_at ?? null,
        not_before: action.not_before ?? null,
        started_at: action.started_at ?? null,
      })
      .returningAll()
      .returning((eb) => (affinity ? warmOnAnotherRunner(eb, eb.val(action.account_id), affinity) : eb.lit(false)).as("warm_elsewhere"))
      .executeTakeFirstOrThrow();
    const { warm_elsewhere, ...inserted } = row;
    return { action: toAction(inserted), warmElsewhere: Boolean(warm_elsewhere) };
  }

  /**
   * Kept until it may have changed: a client polling an action reads it once per change. On
   * PostgreSQL only an ended action is kept (it never changes again; a health check is purged
   * later, so it is not), dropped by its subject all the same.
   */
  get(id: string): Promise<ActionRecord | undefined> {
    return this.q.cached(
      `action:${id}`,
      async () => {
        const row = await this.q.db.selectFrom("actions").selectAll().where("id", "=", id).executeTakeFirst();
        return row && toAction(row);
      },
      (action) => (isTerminal(action.status) && action.type !== CHECK_TYPE ? `action:${action.id}` : undefined),
    );
  }

  /**
   * The action, its row locked until the transaction ends (PostgreSQL: `FOR NO KEY UPDATE`). What a
   * lease holder writes after checking its fence under this lock cannot land after a hand-over:
   * every hand-over (recovery, claim, cancel, finish) changes this row and waits. SQLite's single
   * writer is the lock already.
   */
  async lockForWrite(id: string): Promise<ActionRecord | undefined> {
    if (this.q.adapter.dialect !== "postgres") return this.get(id);
    const row = await this.q.db.selectFrom("actions").selectAll().where("id", "=", id).forNoKeyUpdate().executeTakeFirst();
    return row && toAction(row);
  }

  async list(filter: ActionFilter): Promise<ActionRecord[]> {
    if (filter.accountIds !== undefined && filter.accountIds.length === 0) return [];
    // Health checks are the engine's own: never listed.
    let query = this.q.db.selectFrom("actions").selectAll().where("workspace_id", "=", filter.workspaceId).where("type", "!=", CHECK_TYPE);
    if (filter.accountId !== undefined) query = query.where("account_id", "=", filter.accountId);
    if (filter.status !== undefined) query = query.where("status", "=", filter.status);
    if (filter.type !== undefined) query = query.where("type", "=", filter.type);
    if (filter.routine !== undefined) query = query.where("type", "=", "routine").where(this.#routineName(), "=", filter.routine);
    if (filter.beforeSeq !== undefined) query = query.where("seq", "<", filter.beforeSeq);
    if (filter.accountIds !== undefined) query = query.where("account_id", "in", filter.accountIds);
    const rows = await query.orderBy("seq", "desc").limit(filter.limit).execute();
    return rows.map(toAction);
  }

  /** The routine a routine action ran: its params' `routine`. */
  #routineName() {
    return this.q.adapter.dialect === "postgres" ? sql<string>`(params::jsonb ->> 'routine')` : sql<string>`json_extract(params, '$.routine')`;
  }

  /** The newest action that ran each of these routines (of the accounts a key may see), by name: one statement for a page of them. */
  async lastRoutineRuns(filter: { workspaceId: string; accountIds?: readonly string[] | undefined; names: readonly string[] }): Promise<Map<string, ActionRecord>> {
    if (filter.names.length === 0 || filter.accountIds?.length === 0) return new Map();
    const named = this.#routineName();
    let newest = this.q.db
      .selectFrom("actions")
      .select((eb) => eb.fn.max("seq").as("seq"))
      .where("workspace_id", "=", filter.workspaceId)
      .where("type", "=", "routine")
      .where(named, "in", filter.names);
    if (filter.accountIds !== undefined) newest = newest.where("account_id", "in", filter.accountIds);
    const rows = await this.q.db.selectFrom("actions").selectAll().where("seq", "in", newest.groupBy(named)).execute();
    return new Map(rows.map(toAction).map((action) => [String((action.params as { routine?: unknown }).routine), action]));
  }

  async withStatus(statuses: readonly ActionStatus[]): Promise<ActionRecord[]> {
    if (statuses.length === 0) return [];
    const rows = await this.q.db.selectFrom("actions").selectAll().where("status", "in", statuses).orderBy("seq").execute();
    return rows.map(toAction);
  }

  /**
   * What a claim may take now (DESIGN §3, §11, §16): the oldest queued action of every account with
   * no action running or waiting for input, unless its account's pace keeps it back to a later time
   * (the account's later actions wait behind it, one queue per account), its account is busy on the
   * claiming runner (`skipAccounts`) or an owner's sign-in page holds it (a live hold at `leaseNow`,
   * whichever coordinator took it). Each comes with what its pace is judged by, read in the same
   * statement.
   *
   * Affinity (docs/decisions.md, issue 41 piece C): an action queued since `passOverSince` whose
   * account another live runner with a free run slot ran last is left to that runner (its browser
   * holds the account's context); those warm here (`warmAccounts`, or run last by `runnerId`) come
   * first, and an action queued before `preferWarmSince` counts as warm, so none waits long behind
   * others' warm ones. Health checks come last: they take only the run slots no action wants.
   *
   * `lock` (inside a claim's transaction): on PostgreSQL the actions are locked `FOR UPDATE SKIP
   * LOCKED`, so a coordinator claiming at the same moment passes over them instead of waiting or
   * taking them twice, and their accounts `FOR KEY SHARE`, so a sign-in hold being taken on one
   * commits first and the take (a later statement) sees it. SQLite's single writer needs no lock.
   */
  async claimable(now: string, options: ClaimableOptions): Promise<ClaimCandidate[]> {
    const { runnerId, leaseNow } = options;
    const queuedSince = (eb: ExpressionBuilder<Schema & { a: Schema["actions"] }, "a">, since: string) =>
      eb.or([eb("a.created_at", ">", since), eb("a.not_before", ">", since)]);
    let query = this.q.db
      .selectFrom("actions as a")
      .innerJoin("accounts as acc", "acc.id", "a.account_id")
      .selectAll("a")
      .select("acc.pace as account_pace")
      .select((eb) =>
        eb
          .selectFrom("pace_cooldowns as c")
          .select("c.until")
          .whereRef("c.account_id", "=", "a.account_id")
          .whereRef("c.type", "=", "a.type")
          .as("cooled_until"),
      )
      .where("a.status", "=", "queued")
      .where(({ or, eb }) => or([eb("a.not_before", "is", null), eb("a.not_before", "<=", now)]))
      .where(({ eb, selectFrom }) =>
        eb(
          "a.seq",
          "=",
          selectFrom("actions as q")
            .select(({ fn }) => fn.min("q.seq").as("seq"))
            .whereRef("q.account_id", "=", "a.account_id")
            .where("q.status", "=", "queued"),
        ),
      )
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom("actions as b")
              .select("b.id")
              .whereRef("b.account_id", "=", "a.account_id")
              .where("b.status", "in", ACTIVE),
          ),
        ),
      )
      .where((eb) => eb.not(liveHoldOn(eb, eb.ref("a.account_id"), leaseNow)))
      .where((eb) => eb.not(eb.and([queuedSince(eb, options.passOverSince), warmOnAnotherRunner(eb, eb.ref("a.account_id"), { runnerId, leaseNow })])))
      .orderBy((eb) => eb.case().when("a.type", "=", CHECK_TYPE).then(eb.lit(1)).else(eb.lit(0)).end())
      .orderBy((eb) => {
        const warm = [eb(lastRunnerOf(eb, eb.ref("a.account_id")), "=", runnerId), eb.not(queuedSince(eb, options.preferWarmSince))];
        if (options.warmAccounts.length > 0) warm.push(eb("a.account_id", "in", options.warmAccounts));
        return eb.case().when(eb.or(warm)).then(eb.lit(0)).else(eb.lit(1)).end();
      })
      .orderBy("a.seq")
      .limit(options.limit);
    if (options.skipAccounts.length > 0) query = query.where("a.account_id", "not in", options.skipAccounts);
    if (options.lock && this.q.adapter.dialect === "postgres") query = query.forUpdate("a").skipLocked().modifyEnd(sql`for key share of acc`);
    const rows = await query.execute();
    return rows.map(({ account_pace, cooled_until, ...row }) => ({ action: toAction(row), accountPace: account_pace, cooledUntil: cooled_until ?? undefined }));
  }

  /**
   * Claims queued actions for `runnerId` in one statement: each `running`, with a lease number one
   * higher than it had (DESIGN §11 fencing), started now unless an earlier run started it (a pace
   * counts it once). Returns those taken, oldest first: not one that was no longer queued, whose
   * account an owner's sign-in page holds at `leaseNow`, nor any while the runner's own lease has
   * ended (checked in the same statement).
   */
  async take(ids: readonly string[], runnerId: string, now: string, leaseNow: string): Promise<ActionRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.q.db
      .updateTable("actions")
      .set((eb) => ({
        status: "running",
        runner_id: runnerId,
        lease: eb("lease", "+", 1),
        not_before: null,
        started_at: eb.fn.coalesce("started_at", eb.val(now)),
        updated_at: now,
      }))
      .where("id", "in", ids)
      .where("status", "=", "queued")
      .where((eb) => eb.not(liveHoldOn(eb, eb.ref("actions.account_id"), leaseNow)))
      .where((eb) => this.#leaseHolds(eb, runnerId, leaseNow))
      .returningAll()
      .execute();
    return rows.map(toAction).sort((a, b) => a.seq - b.seq);
  }

  /** Keeps a queued action from starting before `notBefore` (its account's pace or cool-down); returns it so, or undefined when it was no longer queued. */
  async defer(id: string, notBefore: string, now: string): Promise<ActionRecord | undefined> {
    const row = await this.q.db
      .updateTable("actions")
      .set({ not_before: notBefore, updated_at: now })
      .where("id", "=", id)
      .where("status", "=", "queued")
      .returningAll()
      .executeTakeFirst();
    return row && toAction(row);
  }

  /** Defers the account's queued actions of `type` to `notBefore` at least (a cool-down); returns their ids. */
  async deferQueued(accountId: string, type: string, notBefore: string, now: string): Promise<string[]> {
    const rows = await this.q.db
      .updateTable("actions")
      .set({ not_before: notBefore, updated_at: now })
      .where("account_id", "=", accountId)
      .where("type", "=", type)
      .where("status", "=", "queued")
      .where(({ or, eb }) => or([eb("not_before", "is", null), eb("not_before", "<", notBefore)]))
      .returning("id")
      .execute();
    return rows.map((row) => row.id);
  }

  /** Lets the account's queued actions be weighed again at their next claim (its pace changed); returns their ids. */
  async undeferQueued(accountId: string, now: string): Promise<string[]> {
    const rows = await this.q.db
      .updateTable("actions")
      .set({ not_before: null, updated_at: now })
      .where("account_id", "=", accountId)
      .where("status", "=", "queued")
      .where("not_before", "is not", null)
      .returning("id")
      .execute();
    return rows.map((row) => row.id);
  }

  /** When the account's actions of `type` started since `since` (what its pace counts). */
  async startsSince(accountId: string, type: string, since: string): Promise<Date[]> {
    const rows = await this.q.db
      .selectFrom("actions")
      .select("started_at")
      .where("account_id", "=", accountId)
      .where("type", "=", type)
      .where("started_at", ">", since)
      .execute();
    return rows.map((row) => new Date(row.started_at!));
  }

  /** When the actions of these accounts started since `since`, with their account and type (what their paces count, for a claim's candidates at once). */
  async startsSinceOf(accountIds: readonly string[], since: string): Promise<{ account_id: string; type: string; started_at: Date }[]> {
    if (accountIds.length === 0) return [];
    const rows = await this.q.db
      .selectFrom("actions")
      .select(["account_id", "type", "started_at"])
      .where("account_id", "in", accountIds)
      .where("started_at", ">", since)
      .execute();
    return rows.map((row) => ({ account_id: row.account_id, type: row.type, started_at: new Date(row.started_at!) }));
  }

  /** The earliest time after `now` at which a deferred queued action may start (when to look at the queue again). */
  async nextNotBefore(now: string): Promise<string | undefined> {
    const row = await this.q.db
      .selectFrom("actions")
      .select(({ fn }) => fn.min("not_before").as("at"))
      .where("status", "=", "queued")
      .where("not_before", ">", now)
      .executeTakeFirst();
    return row?.at ?? undefined;
  }

  /**
   * Actions running or waiting whose runner's lease is no longer live (or who have none):
   * the process that held them is gone, and they are to be recovered.
   */
  async orphaned(now: string): Promise<ActionRecord[]> {
    const rows = await this.q.db
      .selectFrom("actions")
      .selectAll()
      .where("status", "in", ACTIVE)
      .where(({ or, eb, selectFrom }) =>
        or([eb("runner_id", "is", null), eb("runner_id", "not in", selectFrom("runners").select("id").where("lease_expires_at", ">", now))]),
      )
      .orderBy("seq")
      .execute();
    return rows.map(toAction);
  }

  /** The actions `runnerId` holds (running or waiting), oldest first: a runner checking them against the runs it drives. */
  async heldBy(runnerId: string): Promise<ActionRecord[]> {
    const rows = await this.q.db.selectFrom("actions").selectAll().where("runner_id", "=", runnerId).where("status", "in", ACTIVE).orderBy("seq").execute();
    return rows.map(toAction);
  }

  /** The statuses of some actions, by id (a runner checking on the actions it holds). */
  async statuses(ids: readonly string[]): Promise<Map<string, ActionStatus>> {
    if (ids.length === 0) return new Map();
    const rows = await this.q.db.selectFrom("actions").select(["id", "status"]).where("id", "in", ids).execute();
    return new Map(rows.map((row) => [row.id, row.status as ActionStatus]));
  }

  /** The account of each of some actions, by id (whether a key limited to some accounts may see them). */
  async accountsOf(ids: readonly string[]): Promise<Map<string, { workspace_id: string; account_id: string }>> {
    if (ids.length === 0) return new Map();
    const rows = await this.q.db.selectFrom("actions").select(["id", "workspace_id", "account_id"]).where("id", "in", ids).execute();
    return new Map(rows.map((row) => [row.id, { workspace_id: row.workspace_id, account_id: row.account_id }]));
  }

  /** What a queued action waits behind on its account: the action running or paused there, else an older queued one. */
  async aheadOf(action: { id: string; account_id: string; seq: number }): Promise<ActionRecord | undefined> {
    const row = await this.q.db
      .selectFrom("actions")
      .selectAll()
      .where("account_id", "=", action.account_id)
      .where("id", "!=", action.id)
      .where(({ or, and, eb }) => or([eb("status", "in", ACTIVE), and([eb("status", "=", "queued"), eb("seq", "<", action.seq)])]))
      .orderBy((eb) => eb.case().when("status", "=", "queued").then(eb.lit(1)).else(eb.lit(0)).end())
      .orderBy("seq")
      .limit(1)
      .executeTakeFirst();
    return row && toAction(row);
  }

  /** Whether the account has an action running or waiting for input (its browser context is in use). */
  /** The account's actions waiting at needs_input (an account runs one action at a time). */
  async waitingOf(accountId: string): Promise<ActionRecord[]> {
    const rows = await this.q.db.selectFrom("actions").selectAll().where("account_id", "=", accountId).where("status", "=", "needs_input").execute();
    return rows.map(toAction);
  }

  /** Queued actions across every coordinator, health checks left out (the queue's depth, for metrics). */
  async queuedCount(): Promise<number> {
    const row = await this.q.db
      .selectFrom("actions")
      .select(({ fn }) => fn.countAll<number>().as("n"))
      .where("status", "=", "queued")
      .where("type", "!=", CHECK_TYPE)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async hasActive(accountId: string): Promise<boolean> {
    const row = await this.q.db.selectFrom("actions").select("id").where("account_id", "=", accountId).where("status", "in", ACTIVE).limit(1).executeTakeFirst();
    return row !== undefined;
  }

  /** Whether the account has a health check queued, running or waiting for the inbox. */
  async hasOpenCheck(accountId: string): Promise<boolean> {
    const row = await this.q.db
      .selectFrom("actions")
      .select("id")
      .where("account_id", "=", accountId)
      .where("type", "=", CHECK_TYPE)
      .where("status", "in", ["queued", ...ACTIVE])
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Health checks that ended before `before`, with their challenges: what they found is on the account. */
  async purgeChecks(before: string): Promise<void> {
    const ended = (eb: ExpressionBuilder<Schema, "actions">) =>
      eb.and([eb("type", "=", CHECK_TYPE), eb("finished_at", "is not", null), eb("finished_at", "<", before)]);
    await this.q.db
      .deleteFrom("challenges")
      .where("action_id", "in", (eb) => eb.selectFrom("actions").select("id").where(ended))
      .execute();
    await this.q.db.deleteFrom("actions").where(ended).execute();
  }

  /**
   * Notes that the run is past the step that cannot be undone (`committed_at`), in one statement
   * fenced as a run's writes are (DESIGN §11): only while the action has not ended, is still the
   * claim's that ran it (its runner and lease number), and that runner's lease holds at `leaseNow`
   * in the database. False when it is not so: the run no longer holds the action.
   */
  async markCommitted(id: string, claim: { runnerId: string; lease: number }, now: string, leaseNow: string): Promise<boolean> {
    const result = await this.q.db
      .updateTable("actions")
      .set({ committed_at: now, updated_at: now })
      .where("id", "=", id)
      .where("status", "not in", [...TERMINAL_STATUSES])
      .where("runner_id", "=", claim.runnerId)
      .where("lease", "=", claim.lease)
      .where((eb) => this.#leaseHolds(eb, claim.runnerId, leaseNow))
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Whether `runnerId`'s lease holds at `leaseNow`, in the database (a fenced write's condition). */
  #leaseHolds(eb: ExpressionBuilder<Schema, "actions">, runnerId: string, leaseNow: string) {
    return eb.exists(eb.selectFrom("runners").select("runners.id").where("runners.id", "=", runnerId).where("runners.lease_expires_at", ">", timeIn(this.q.adapter.dialect, leaseNow)));
  }

  /** Writes the changed fields; callers check the transition first. */
  async update(
    id: string,
    changes: Partial<Pick<ActionRecord, "status" | "error_code" | "error_message" | "result" | "cost" | "held" | "runner_id" | "committed_at" | "answered_by" | "finished_at">>,
    now: string,
  ): Promise<void> {
    const values: Record<string, unknown> = { updated_at: now };
    for (const [field, value] of Object.entries(changes)) {
      values[field] = field === "result" ? JSON.stringify(value) : field === "held" ? (value ? 1 : 0) : (value ?? null);
    }
    await this.q.db.updateTable("actions").set(values).where("id", "=", id).execute();
  }
}
