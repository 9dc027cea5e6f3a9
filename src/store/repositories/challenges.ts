import type { Db } from "../database.js";
import type { Sealer } from "../crypto.js";
import { sha256 } from "../crypto.js";
import type { ChallengeRecord, ChallengeState } from "../records.js";

const COLUMNS = "id, action_id, kind, message, expires_at, link_expires_at, refusals, state, created_at, updated_at";

export class ChallengeRepository {
  constructor(
    private readonly db: Db,
    private readonly sealer: Sealer,
  ) {}

  /** Stores the challenge with its live-link token hashed (for look-up) and sealed (to show the link again). */
  insert(challenge: Omit<ChallengeRecord, "updated_at">, linkToken: string): void {
    this.db
      .prepare(
        `INSERT INTO challenges (id, action_id, kind, message, expires_at, link_hash, link_sealed, link_expires_at, refusals, state, created_at, updated_at)
         VALUES (@id, @action_id, @kind, @message, @expires_at, @link_hash, @link_sealed, @link_expires_at, @refusals, @state, @created_at, @created_at)`,
      )
      .run({ ...challenge, link_hash: sha256(linkToken), link_sealed: this.sealer.seal(linkToken, `challenge:${challenge.id}:link`) });
  }

  get(id: string): ChallengeRecord | undefined {
    return this.db.prepare(`SELECT ${COLUMNS} FROM challenges WHERE id = ?`).get(id) as ChallengeRecord | undefined;
  }

  /** The newest challenge of an action. */
  latestOf(actionId: string): ChallengeRecord | undefined {
    return this.db.prepare(`SELECT ${COLUMNS} FROM challenges WHERE action_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1`).get(actionId) as
      | ChallengeRecord
      | undefined;
  }

  byLinkToken(token: string): ChallengeRecord | undefined {
    return this.db.prepare(`SELECT ${COLUMNS} FROM challenges WHERE link_hash = ?`).get(sha256(token)) as ChallengeRecord | undefined;
  }

  linkToken(id: string): string {
    const sealed = this.db.prepare("SELECT link_sealed FROM challenges WHERE id = ?").pluck().get(id) as Buffer;
    return this.sealer.open(sealed, `challenge:${id}:link`);
  }

  /** Open challenges whose deadline is at or before `now`. */
  overdue(now: string): ChallengeRecord[] {
    return this.db.prepare(`SELECT ${COLUMNS} FROM challenges WHERE state = 'open' AND expires_at <= ?`).all(now) as ChallengeRecord[];
  }

  /** Keeps an answer (sealed) for the runner that holds the page; it takes it with `takeAnswer`. */
  recordAnswer(id: string, answer: string, now: string): void {
    this.db
      .prepare("UPDATE challenges SET state = 'answered', answer_sealed = ?, updated_at = ? WHERE id = ?")
      .run(this.sealer.seal(answer, `challenge:${id}:answer`), now, id);
  }

  /** The answer waiting on a challenge, removed from the store as it is read. */
  takeAnswer(id: string): string | undefined {
    const sealed = this.db.prepare("SELECT answer_sealed FROM challenges WHERE id = ?").pluck().get(id) as Buffer | null | undefined;
    if (!sealed) return undefined;
    this.db.prepare("UPDATE challenges SET answer_sealed = NULL WHERE id = ?").run(id);
    return this.sealer.open(sealed, `challenge:${id}:answer`);
  }

  /** Of these challenges, the ones answered and not yet taken. */
  answered(ids: readonly string[]): string[] {
    return this.db
      .prepare("SELECT id FROM challenges WHERE state = 'answered' AND answer_sealed IS NOT NULL AND id IN (SELECT value FROM json_each(?))")
      .pluck()
      .all(JSON.stringify(ids)) as string[];
  }

  update(id: string, changes: { state?: ChallengeState; message?: string; refusals?: number }, now: string): void {
    const sets = ["updated_at = @now"];
    // An answer is kept only while its challenge waits for the runner to take it.
    if (changes.state !== undefined && changes.state !== "answered") sets.push("answer_sealed = NULL");
    if (changes.state !== undefined) sets.push("state = @state");
    if (changes.message !== undefined) sets.push("message = @message");
    if (changes.refusals !== undefined) sets.push("refusals = @refusals");
    this.db.prepare(`UPDATE challenges SET ${sets.join(", ")} WHERE id = @id`).run({ ...changes, id, now });
  }
}
