import type { Queries } from "../queries.js";

/**
 * What SQLite's `lower()` did to the name before: ASCII letters only. PostgreSQL's `lower()`
 * (and `toLowerCase`) fold other letters too, so the fold is done here, the same on both and
 * matching the rows SQLite already holds.
 */
const lowerAscii = (text: string): string => text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());

/** TOTP time steps already submitted, per platform user: a step's code is sent at most once. */
export class TotpStepRepository {
  constructor(private readonly q: Queries) {}

  /** Claims `step` for the user; false when that step (or a later one) was already claimed. */
  async claim(platform: string, username: string, step: number): Promise<boolean> {
    const result = await this.q.db
      .insertInto("totp_steps")
      .values({ platform, username: lowerAscii(username), last_step: step })
      .onConflict((oc) =>
        oc
          .columns(["platform", "username"])
          .doUpdateSet((eb) => ({ last_step: eb.ref("excluded.last_step") }))
          .whereRef("excluded.last_step", ">", "totp_steps.last_step"),
      )
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows) === 1;
  }
}
