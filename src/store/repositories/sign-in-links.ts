import type { Db } from "../database.js";
import { sha256 } from "../crypto.js";

export interface SignInLinkRecord {
  id: string;
  account_id: string;
  /** The key that made the link (undefined for the stdio owner). */
  key_id: string | undefined;
  expires_at: string;
  state: "open" | "completed";
  created_at: string;
  updated_at: string;
}

/** Owner sign-in links; only a hash of each token is kept (the URL is shown once, at creation). */
export class SignInLinkRepository {
  constructor(private readonly db: Db) {}

  insert(link: Omit<SignInLinkRecord, "updated_at" | "state">, token: string): void {
    this.db
      .prepare(
        `INSERT INTO sign_in_links (id, account_id, key_id, link_hash, expires_at, state, created_at, updated_at)
         VALUES (@id, @account_id, @key_id, @link_hash, @expires_at, 'open', @created_at, @created_at)`,
      )
      .run({ ...link, key_id: link.key_id ?? null, link_hash: sha256(token) });
  }

  byToken(token: string): SignInLinkRecord | undefined {
    const row = this.db.prepare("SELECT id, account_id, key_id, expires_at, state, created_at, updated_at FROM sign_in_links WHERE link_hash = ?").get(sha256(token)) as
      | (Omit<SignInLinkRecord, "key_id"> & { key_id: string | null })
      | undefined;
    return row && { ...row, key_id: row.key_id ?? undefined };
  }

  complete(id: string, now: string): void {
    this.db.prepare("UPDATE sign_in_links SET state = 'completed', updated_at = ? WHERE id = ?").run(now, id);
  }
}
