import type { Queries } from "../queries.js";

/** TOTP time steps already submitted, per platform user: a step's code is sent at most once. */
export class TotpStepRepository {
  constructor(private readonly q: Queries) {}

  /** Claims `step` for the user; false when that step (or a later one) was already claimed. */
  async claim(platform: string, username: string, step: number): Promise<boolean> {
    const result = await this.q.db
      .insertInto("totp_steps")
      .values({ platform, username: username.toLowerCase(), last_step: step })
      .onConflict((oc) =>
        oc
          .columns(["platform", "username"])
          .doUpdateSet((eb) => ({ last_step: eb.ref("excluded.last_step") }))
          .where("excluded.last_step", ">", (eb) => eb.ref("totp_steps.last_step")),
      )
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows) === 1;
  }
}
