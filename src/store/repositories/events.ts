import { sql, type ExpressionBuilder, type Kysely } from "kysely";
import type { Queries } from "../queries.js";
import type { Schema } from "../schema.js";

export type EventType = "action.updated" | "account.updated";

/**
 * A place in the outbox, in the order its readers follow: the event's transaction order, then its
 * `seq` (decisions: "The outbox is read in transaction order").
 */
export interface EventCursor {
  order: number;
  seq: number;
}

/** Before every event. */
export const OUTBOX_START: EventCursor = { order: 0, seq: 0 };

/** One outbox row: a status change as the public saw it then. */
export interface EventRecord {
  seq: number;
  /** Its transaction's place in the outbox's order (always 0 on SQLite, whose one writer commits in `seq` order). */
  tx_order: number;
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

/** Where a reader that has read `event` goes on from. */
export const cursorOf = (event: Pick<EventRecord, "tx_order" | "seq">): EventCursor => ({ order: event.tx_order, seq: event.seq });

/**
 * The oldest transaction id that may still write an event in this database: the oldest one running
 * here (prepared ones included), and no further than the newest one ended. Transactions of other
 * databases on the same server hold nothing back. Running xids are 32-bit in `pg_stat_activity`:
 * each is widened to 64 bits as the one nearest the snapshot's `xmax`.
 */
const HORIZON = sql<{ horizon: number | string }>`
  WITH now AS (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax),
  running AS (
    SELECT backend_xid::text::bigint AS xid FROM pg_stat_activity WHERE datname = current_database() AND backend_xid IS NOT NULL
    UNION ALL
    SELECT transaction::text::bigint FROM pg_prepared_xacts WHERE database = current_database()
  )
  SELECT LEAST(min(now.xmax), min(now.xmax + ((running.xid - now.xmax + 2147483648) % 4294967296 + 4294967296) % 4294967296 - 2147483648)) AS horizon
  FROM now LEFT JOIN running ON true`;

/**
 * The event outbox (DESIGN §13): appended in the transaction of the change it records, read in the
 * order of its transactions.
 *
 * PostgreSQL hands out `seq` at insert, not at commit, and takes no lock for it: two coordinators'
 * transactions write events at once and commit in any order. So each event also records its
 * transaction's order (`tx_order`, set by the column's default: migrations/postgres/009), and a
 * reader follows (`tx_order`, `seq`) and reads only events below the horizon — ordered before every
 * transaction that may still be running — where nothing can be added any more. It neither skips an
 * event nor reads one twice, and an event written after another's commit comes after it. SQLite's
 * one writer commits in `seq` order, `tx_order` is always 0 there and every committed event is
 * below the horizon.
 */
export class EventRepository {
  constructor(private readonly q: Queries) {}

  /**
   * Appends events in one statement (inside the change's transaction; it takes no lock: see the
   * class), as the outbox writes one and a batched claim several; returns their `seq`s,
   * in the order given, and whether any of their workspaces has an enabled webhook endpoint, found
   * by the same statement: where none has — most workspaces, most of the time — there is nothing to
   * fan out and the endpoints are not read again (three statements a post). They are looked at in
   * the insert's own snapshot, as a read right after it would look.
   */
  async insertAll(events: readonly Omit<EventRecord, "seq" | "tx_order">[]): Promise<{ seqs: number[]; endpoints: boolean }> {
    if (events.length === 0) return { seqs: [], endpoints: false };
    const workspaces = [...new Set(events.map((event) => event.workspace_id))];
    const rows = await this.q.db
      .insertInto("events")
      .values(events.map((event) => ({ ...event, challenge_id: event.challenge_id ?? null, data: JSON.stringify(event.data) })))
      .returning((eb) => [
        "id",
        "seq",
        eb
          .exists(eb.selectFrom("webhook_endpoints").select(sql.lit(1).as("one")).where("workspace_id", "in", workspaces).where("disabled_at", "is", null))
          .as("endpoints"),
      ])
      .execute();
    const seqOf = new Map(rows.map((row) => [row.id, row.seq]));
    // SQLite answers 0 or 1, PostgreSQL a boolean.
    return { seqs: events.map((event) => seqOf.get(event.id)!), endpoints: rows.some((row) => Boolean(row.endpoints)) };
  }

  async bySeq(seq: number): Promise<EventRecord | undefined> {
    const row = await this.q.db.selectFrom("events").selectAll().where("seq", "=", seq).executeTakeFirst();
    return row && toRecord(row);
  }

  /** Where a reader resumes after a workspace's event id, if that event is still kept. */
  async cursorAfter(workspaceId: string, id: string): Promise<EventCursor | undefined> {
    const row = await this.q.db.selectFrom("events").select(["tx_order", "seq"]).where("id", "=", id).where("workspace_id", "=", workspaceId).executeTakeFirst();
    return row && cursorOf(row);
  }

  /**
   * The newest event of a workspace (of every workspace when none is given) that a reader may pass
   * now: a reader starting after it misses nothing committed later. Undefined when there is none.
   */
  async newest(workspaceId?: string): Promise<{ id: string; cursor: EventCursor } | undefined> {
    const horizon = await this.#horizon();
    let query = this.#readerDb.selectFrom("events").select(["id", "tx_order", "seq"]);
    if (workspaceId !== undefined) query = query.where("workspace_id", "=", workspaceId);
    if (horizon !== undefined) query = query.where("tx_order", "<", horizon);
    const row = await query.orderBy("tx_order", "desc").orderBy("seq", "desc").limit(1).executeTakeFirst();
    return row && { id: row.id, cursor: cursorOf(row) };
  }

  /** A workspace's events after `after`, in the outbox's order, only of these accounts when given: each once, none skipped. */
  async after(workspaceId: string, after: EventCursor, limit: number, accountIds?: readonly string[]): Promise<EventRecord[]> {
    if (accountIds !== undefined && accountIds.length === 0) return [];
    const horizon = await this.#horizon();
    let query = this.#readerDb.selectFrom("events").selectAll().where("workspace_id", "=", workspaceId).where(isAfter(after));
    if (horizon !== undefined) query = query.where("tx_order", "<", horizon);
    if (accountIds !== undefined) query = query.where("account_id", "in", accountIds);
    const rows = await query.orderBy("tx_order").orderBy("seq").limit(limit).execute();
    return rows.map(toRecord);
  }

  /**
   * A workspace's committed events, oldest `seq` first, including those of transactions a reader may
   * not pass yet: what has happened so far, to look at (a follower reads `after`).
   */
  async list(workspaceId: string, limit: number): Promise<EventRecord[]> {
    const rows = await this.q.db.selectFrom("events").selectAll().where("workspace_id", "=", workspaceId).orderBy("seq").limit(limit).execute();
    return rows.map(toRecord);
  }

  /**
   * Actions whose change was recorded after `after`, in any workspace (each with its workspace), in the outbox's order. Those
   * of transactions a reader may not pass yet are included, marked not `final` (they come after all
   * the final ones): to announce a change at once, while a reader's place moves over final ones only.
   */
  async actionsChangedAfter(after: EventCursor, limit: number): Promise<{ cursor: EventCursor; actionId: string; workspaceId: string; final: boolean }[]> {
    const horizon = await this.#horizon();
    const rows = await this.#readerDb
      .selectFrom("events")
      .select(["tx_order", "seq", "subject_id", "workspace_id"])
      .where(isAfter(after))
      .where("type", "=", "action.updated")
      .orderBy("tx_order")
      .orderBy("seq")
      .limit(limit)
      .execute();
    return rows.map((row) => ({ cursor: cursorOf(row), actionId: row.subject_id, workspaceId: row.workspace_id, final: horizon === undefined || row.tx_order < horizon }));
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

  /**
   * PostgreSQL: the horizon, read in a statement of its own before the read that uses it (the read's
   * snapshot must be taken after the running transactions were looked at). SQLite: none.
   */
  async #horizon(): Promise<number | undefined> {
    if (this.q.adapter.dialect !== "postgres") return undefined;
    const { rows } = await HORIZON.execute(this.q.adapter.db);
    return Number(rows[0]!.horizon);
  }

  /**
   * Where a follower reads: on PostgreSQL always a statement of its own, whose snapshot is newer
   * than the horizon, even if called inside a transaction (whose snapshot may be older); SQLite's
   * one connection is the transaction's when there is one.
   */
  get #readerDb(): Kysely<Schema> {
    return this.q.adapter.dialect === "postgres" ? this.q.adapter.db : this.q.db;
  }
}

/** Events placed after `cursor`. */
const isAfter =
  (cursor: EventCursor) =>
  (eb: ExpressionBuilder<Schema, "events">) =>
    eb(eb.refTuple("tx_order", "seq"), ">", eb.tuple(cursor.order, cursor.seq));
