import { sha256 } from "../crypto.js";
import type { Queries } from "../queries.js";

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
  constructor(private readonly q: Queries) {}

  async insert(link: Omit<SignInLinkRecord, "updated_at" | "state">, token: string): Promise<void> {
    await this.q.db
      .insertInto("sign_in_links")
      .values({ ...link, key_id: link.key_id ?? null, link_hash: sha256(token), state: "open", updated_at: link.created_at })
      .execute();
  }

  async byToken(token: string): Promise<SignInLinkRecord | undefined> {
    const row = await this.q.db
      .selectFrom("sign_in_links")
      .select(["id", "account_id", "key_id", "expires_at", "state", "created_at", "updated_at"])
      .where("link_hash", "=", sha256(token))
      .executeTakeFirst();
    return row && { ...row, state: row.state as SignInLinkRecord["state"], key_id: row.key_id ?? undefined };
  }

  async complete(id: string, now: string): Promise<void> {
    await this.q.db.updateTable("sign_in_links").set({ state: "completed", updated_at: now }).where("id", "=", id).execute();
  }
}
