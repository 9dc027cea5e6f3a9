import { sql } from "kysely";
import type { Queries } from "../queries.js";

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

interface EventRow extends Omit<EventRecord, "data" | "challenge_id" | "type"> {
  type: string;
  data: string;
  challenge_id: string | null;
}

const toRecord = (row: EventRow): EventRecord => ({ ...row, type: row.type as EventType, challenge_id: row.challenge_id ?? undefined, data: JSON.parse(row.data) as Record<string, unknown> });

/** The transaction-scoped advisory lock that makes PostgreSQL commit events in `seq` order. */
const EVENTS_IN_ORDER = 7_402_612;

/** The event outbox (DESIGN §13): appended in the transaction of the change it records. */
export class EventRepository {
  constructor(private readonly q: Queries) {}

  /**
   * Appends an event (inside the change's transaction); returns its `seq` (its place in the
   * workspace's stream). Readers follow `seq`, so events must commit in `seq` order: SQLite's one
   * writer does that by itself; on PostgreSQL the insert first takes a lock held to commit
   * (decisions: "Events commit in seq order").
   */
  async insert(event: Omit<EventRecord, "seq">): Promise<number> {
    if (this.q.adapter.dialect === "postgres") await sql`SELECT pg_advisory_xact_lock(${EVENTS_IN_ORDER})`.execute(this.q.db);
    const row = await this.q.db
      .insertInto("events")
      .values({ ...event, challenge_id: event.challenge_id ?? null, data: JSON.stringify(event.data) })
      .returning("seq")
      .executeTakeFirstOrThrow();
    return row.seq;
  }

  async bySeq(seq: number): Promise<EventRecord | undefined> {
    const row = await this.q.db.selectFrom("events").selectAll().where("seq", "=", seq).executeTakeFirst();
    return row && toRecord(row);
  }

  /** The `seq` of a workspace's event id (to resume after it), if it is still kept. */
  async seqOf(workspaceId: string, id: string): Promise<number | undefined> {
    const row = await this.q.db.selectFrom("events").select("seq").where("id", "=", id).where("workspace_id", "=", workspaceId).executeTakeFirst();
    return row?.seq;
  }

  /** The newest `seq` of a workspace (0 when it has none). */
  async latestSeq(workspaceId: string): Promise<number> {
    const row = await this.q.db
      .selectFrom("events")
      .select(({ fn }) => fn.max("seq").as("seq"))
      .where("workspace_id", "=", workspaceId)
      .executeTakeFirst();
    return Number(row?.seq ?? 0);
  }

  /** The newest event id of a workspace, if any. */
  async latestId(workspaceId: string): Promise<string | undefined> {
    const row = await this.q.db.selectFrom("events").select("id").where("workspace_id", "=", workspaceId).orderBy("seq", "desc").limit(1).executeTakeFirst();
    return row?.id;
  }

  /** A workspace's events after `afterSeq`, oldest first, only of these accounts when given. */
  async after(workspaceId: string, afterSeq: number, limit: number, accountIds?: readonly string[]): Promise<EventRecord[]> {
    if (accountIds !== undefined && accountIds.length === 0) return [];
    let query = this.q.db.selectFrom("events").selectAll().where("workspace_id", "=", workspaceId).where("seq", ">", afterSeq);
    if (accountIds !== undefined) query = query.where("account_id", "in", accountIds);
    const rows = await query.orderBy("seq").limit(limit).execute();
    return rows.map(toRecord);
  }

  /** The newest event's seq in any workspace (0 for none). */
  async maxSeq(): Promise<number> {
    const row = await this.q.db
      .selectFrom("events")
      .select(({ fn }) => fn.max("seq").as("seq"))
      .executeTakeFirst();
    return Number(row?.seq ?? 0);
  }

  /** Actions whose change was recorded after `afterSeq`, in any workspace, oldest first, with the newest seq read. */
  async actionsChangedAfter(afterSeq: number, limit: number): Promise<{ seq: number; actionId: string }[]> {
    const rows = await this.q.db
      .selectFrom("events")
      .select(["seq", "subject_id"])
      .where("seq", ">", afterSeq)
      .where("type", "=", "action.updated")
      .orderBy("seq")
      .limit(limit)
      .execute();
    return rows.map((row) => ({ seq: row.seq, actionId: row.subject_id }));
  }

  /** Drops events older than `before` with no delivery still to make. */
  async purgeBefore(before: string): Promise<number> {
    const result = await this.q.db
      .deleteFrom("events")
      .where("created_at", "<", before)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom("webhook_deliveries as d")
              .select("d.id")
              .whereRef("d.event_seq", "=", "events.seq")
              .where("d.state", "=", "pending"),
          ),
        ),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
