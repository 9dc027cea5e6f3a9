import { sql } from "kysely";
import type { Sealer } from "../crypto.js";
import { sha256 } from "../crypto.js";
import type { Queries } from "../queries.js";
import type { AnsweredBy } from "../../domain/inbox.js";
import type { ChallengeRecord, ChallengeState } from "../records.js";
import { orUndefined } from "../records.js";
import { nextDeadlineAt } from "./work-due.js";

const COLUMNS = ["id", "action_id", "kind", "message", "expires_at", "link_expires_at", "refusals", "state", "answered_by", "inbox_closed_at", "created_at", "updated_at"] as const;

type ChallengeRow = Omit<ChallengeRecord, "kind" | "state" | "answered_by" | "inbox_closed_at"> & { kind: string; state: string; answered_by: string | null; inbox_closed_at: string | null };
const toChallenge = (row: ChallengeRow): ChallengeRecord => ({
  ...(row as Omit<ChallengeRow, "answered_by" | "inbox_closed_at"> as ChallengeRecord),
  answered_by: orUndefined(row.answered_by) as AnsweredBy | undefined,
  inbox_closed_at: orUndefined(row.inbox_closed_at),
});

export class ChallengeRepository {
  constructor(
    private readonly q: Queries,
    private readonly sealer: Sealer,
  ) {}

  /** Stores the challenge with its live-link token hashed (for look-up) and sealed (to show the link again). */
  async insert(challenge: Omit<ChallengeRecord, "updated_at">, linkToken: string): Promise<void> {
    await this.q.db
      .insertInto("challenges")
      .values({
        ...challenge,
        answered_by: challenge.answered_by ?? null,
        inbox_closed_at: challenge.inbox_closed_at ?? null,
        updated_at: challenge.created_at,
        link_hash: sha256(linkToken),
        link_sealed: this.sealer.seal(linkToken, `challenge:${challenge.id}:link`),
      })
      .execute();
  }

  async get(id: string): Promise<ChallengeRecord | undefined> {
    const row = await this.q.db.selectFrom("challenges").select(COLUMNS).where("id", "=", id).executeTakeFirst();
    return row && toChallenge(row);
  }

  /**
   * The newest challenge of an action: ties in `created_at` (a fake clock, a challenge asked afresh
   * at once) go by `rowid`, SQLite's own and on PostgreSQL an identity column of that name.
   */
  async latestOf(actionId: string): Promise<ChallengeRecord | undefined> {
    const row = await this.q.db
      .selectFrom("challenges")
      .select(COLUMNS)
      .where("action_id", "=", actionId)
      .orderBy("created_at", "desc")
      .orderBy(sql`rowid`, "desc")
      .limit(1)
      .executeTakeFirst();
    return row && toChallenge(row);
  }

  async byLinkToken(token: string): Promise<ChallengeRecord | undefined> {
    const row = await this.q.db.selectFrom("challenges").select(COLUMNS).where("link_hash", "=", sha256(token)).executeTakeFirst();
    return row && toChallenge(row);
  }

  async linkToken(id: string): Promise<string> {
    const row = await this.q.db.selectFrom("challenges").select("link_sealed").where("id", "=", id).executeTakeFirstOrThrow();
    return this.sealer.open(row.link_sealed, `challenge:${id}:link`);
  }

  /** Open challenges whose deadline is at or before `now`. */
  async overdue(now: string): Promise<ChallengeRecord[]> {
    const rows = await this.q.db.selectFrom("challenges").select(COLUMNS).where("state", "=", "open").where("expires_at", "<=", now).execute();
    return rows.map(toChallenge);
  }

  /** The earliest deadline of an open challenge its action waits at (`nextDeadlineAt`): when the deadline sweep has something to do next. */
  async nextDeadline(): Promise<string | undefined> {
    const row = await this.q.db.selectNoFrom(nextDeadlineAt().as("at")).executeTakeFirst();
    return row?.at ?? undefined;
  }

  /**
   * Whether the challenge is still open and its deadline has passed at `now`: what the deadline
   * sweep checks in the transaction that fails its action, so an answer recorded since wins.
   */
  async isOverdue(id: string, now: string): Promise<boolean> {
    let query = this.q.db.selectFrom("challenges").select("id").where("id", "=", id).where("state", "=", "open").where("expires_at", "<=", now);
    // Locked (PostgreSQL): an answer recorded meanwhile waits, then finds the challenge closed.
    if (this.q.adapter.dialect === "postgres") query = query.forNoKeyUpdate();
    const row = await query.executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Keeps an answer (sealed) for the runner that holds the page, and who gave it; the runner takes
   * it with `takeAnswer`. Only while the challenge is open and its deadline has not passed at `now`
   * (false otherwise): an answer and the deadline sweep never both win.
   */
  async recordAnswer(id: string, answer: string, by: AnsweredBy, now: string): Promise<boolean> {
    const { numUpdatedRows } = await this.q.db
      .updateTable("challenges")
      .set({ state: "answered", answer_sealed: this.sealer.seal(answer, `challenge:${id}:answer`), answered_by: by, updated_at: now })
      .where("id", "=", id)
      .where("state", "=", "open")
      .where("expires_at", ">", now)
      .executeTakeFirst();
    return numUpdatedRows === 1n;
  }

  /** The answer waiting on a challenge, removed from the store as it is read (call inside a transaction). */
  async takeAnswer(id: string): Promise<string | undefined> {
    const row = await this.q.db.selectFrom("challenges").select("answer_sealed").where("id", "=", id).executeTakeFirst();
    const sealed = row?.answer_sealed;
    if (!sealed) return undefined;
    await this.q.db.updateTable("challenges").set({ answer_sealed: null }).where("id", "=", id).execute();
    return this.sealer.open(sealed, `challenge:${id}:answer`);
  }

  /** Of these challenges, the ones answered and not yet taken. */
  async answered(ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.q.db
      .selectFrom("challenges")
      .select("id")
      .where("state", "=", "answered")
      .where("answer_sealed", "is not", null)
      .where("id", "in", ids)
      .execute();
    return rows.map((row) => row.id);
  }

  async update(id: string, changes: { state?: ChallengeState; message?: string; refusals?: number; inbox_closed_at?: string; answered_by?: AnsweredBy }, now: string): Promise<void> {
    await this.q.db
      .updateTable("challenges")
      .set({
        updated_at: now,
        // An answer is kept only while its challenge waits for the runner to take it.
        ...(changes.state !== undefined && changes.state !== "answered" ? { answer_sealed: null } : {}),
        ...(changes.state !== undefined ? { state: changes.state } : {}),
        ...(changes.message !== undefined ? { message: changes.message } : {}),
        ...(changes.refusals !== undefined ? { refusals: changes.refusals } : {}),
        ...(changes.inbox_closed_at !== undefined ? { inbox_closed_at: changes.inbox_closed_at } : {}),
        ...(changes.answered_by !== undefined ? { answered_by: changes.answered_by } : {}),
      })
      .where("id", "=", id)
      .execute();
  }
}
