import type { KeyRole } from "../../domain/keys.js";
import { sha256 } from "../crypto.js";
import type { Queries } from "../queries.js";

/** A web app session and the key it is bound to (the key as it is now). */
export interface WebSessionRecord {
  key_id: string;
  workspace_id: string;
  workspace_name: string;
  role: KeyRole;
  account_ids: string[] | undefined;
  key_prefix: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
}

/** Web app sessions; only a hash of each cookie token is kept. */
export class WebSessionRepository {
  constructor(private readonly q: Queries) {}

  async insert(token: string, session: { key_id: string; created_at: string; expires_at: string }): Promise<void> {
    await this.q.db
      .insertInto("web_sessions")
      .values({ token_hash: sha256(token), key_id: session.key_id, created_at: session.created_at, last_seen_at: session.created_at, expires_at: session.expires_at })
      .execute();
  }

  /** The session, while it has not expired and its key is not revoked. */
  async byToken(token: string, now: string): Promise<WebSessionRecord | undefined> {
    const row = await this.q.db
      .selectFrom("web_sessions as s")
      .innerJoin("api_keys as k", "k.id", "s.key_id")
      .innerJoin("workspaces as w", "w.id", "k.workspace_id")
      .select(["s.key_id", "s.created_at", "s.last_seen_at", "s.expires_at", "k.workspace_id", "w.name as workspace_name", "k.role", "k.account_ids", "k.prefix as key_prefix"])
      .where("s.token_hash", "=", sha256(token))
      .where("s.expires_at", ">", now)
      .where("k.revoked_at", "is", null)
      .executeTakeFirst();
    return row && { ...row, role: row.role as KeyRole, account_ids: row.account_ids === null ? undefined : (JSON.parse(row.account_ids) as string[]) };
  }

  /** Records use: the idle deadline moves to `expires_at` (never past the session's absolute end, which the caller computes). */
  async touch(token: string, now: string, expiresAt: string): Promise<void> {
    await this.q.db.updateTable("web_sessions").set({ last_seen_at: now, expires_at: expiresAt }).where("token_hash", "=", sha256(token)).execute();
  }

  async delete(token: string): Promise<void> {
    await this.q.db.deleteFrom("web_sessions").where("token_hash", "=", sha256(token)).execute();
  }

  /** Ends every session of a key (when it is revoked). */
  async deleteForKey(keyId: string): Promise<number> {
    const result = await this.q.db.deleteFrom("web_sessions").where("key_id", "=", keyId).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async purgeExpired(now: string): Promise<number> {
    const result = await this.q.db.deleteFrom("web_sessions").where("expires_at", "<=", now).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
