import type { Db } from "../database.js";
import { sha256 } from "../crypto.js";
import type { KeyRole } from "../../domain/keys.js";

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
  constructor(private readonly db: Db) {}

  insert(token: string, session: { key_id: string; created_at: string; expires_at: string }): void {
    this.db
      .prepare("INSERT INTO web_sessions (token_hash, key_id, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?)")
      .run(sha256(token), session.key_id, session.created_at, session.created_at, session.expires_at);
  }

  /** The session, while it has not expired and its key is not revoked. */
  byToken(token: string, now: string): WebSessionRecord | undefined {
    const row = this.db
      .prepare(
        `SELECT s.key_id, s.created_at, s.last_seen_at, s.expires_at, k.workspace_id, w.name AS workspace_name, k.role, k.account_ids, k.prefix AS key_prefix
         FROM web_sessions s JOIN api_keys k ON k.id = s.key_id JOIN workspaces w ON w.id = k.workspace_id
         WHERE s.token_hash = ? AND s.expires_at > ? AND k.revoked_at IS NULL`,
      )
      .get(sha256(token), now) as (Omit<WebSessionRecord, "account_ids"> & { account_ids: string | null }) | undefined;
    return row && { ...row, account_ids: row.account_ids === null ? undefined : (JSON.parse(row.account_ids) as string[]) };
  }

  /** Records use: the idle deadline moves to `expires_at` (never past the session's absolute end, which the caller computes). */
  touch(token: string, now: string, expiresAt: string): void {
    this.db.prepare("UPDATE web_sessions SET last_seen_at = ?, expires_at = ? WHERE token_hash = ?").run(now, expiresAt, sha256(token));
  }

  delete(token: string): void {
    this.db.prepare("DELETE FROM web_sessions WHERE token_hash = ?").run(sha256(token));
  }

  /** Ends every session of a key (when it is revoked). */
  deleteForKey(keyId: string): number {
    return this.db.prepare("DELETE FROM web_sessions WHERE key_id = ?").run(keyId).changes;
  }

  purgeExpired(now: string): number {
    return this.db.prepare("DELETE FROM web_sessions WHERE expires_at <= ?").run(now).changes;
  }
}
