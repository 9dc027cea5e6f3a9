import type { Queries } from "../queries.js";

/** A platform's "slow down" on an account's actions of one type (DESIGN §16). */
export interface PaceCooldown {
  account_id: string;
  type: string;
  /** The account's actions of that type wait until then. */
  until: string;
  /** `rate_limited` failures in a row: each doubles the next wait. */
  strikes: number;
}

/** Cool-downs after `rate_limited` failures: one row per account and type, deleted by a success. */
export class PaceCooldownRepository {
  constructor(private readonly q: Queries) {}

  async get(accountId: string, type: string): Promise<PaceCooldown | undefined> {
    return this.q.db.selectFrom("pace_cooldowns").selectAll().where("account_id", "=", accountId).where("type", "=", type).executeTakeFirst();
  }

  async put(cooldown: PaceCooldown): Promise<void> {
    await this.q.db
      .insertInto("pace_cooldowns")
      .values(cooldown)
      .onConflict((oc) => oc.columns(["account_id", "type"]).doUpdateSet({ until: cooldown.until, strikes: cooldown.strikes }))
      .execute();
  }

  async clear(accountId: string, type: string): Promise<void> {
    await this.q.db.deleteFrom("pace_cooldowns").where("account_id", "=", accountId).where("type", "=", type).execute();
  }
}
