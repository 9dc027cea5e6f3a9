import type { Db } from "../database.js";

/** TOTP time steps already submitted, per platform user: a step's code is sent at most once. */
export class TotpStepRepository {
  constructor(private readonly db: Db) {}

  /** Claims `step` for the user; false when that step (or a later one) was already claimed. */
  claim(platform: string, username: string, step: number): boolean {
    const claimed = this.db
      .prepare(
        `INSERT INTO totp_steps (platform, username, last_step) VALUES (?, lower(?), ?)
         ON CONFLICT (platform, username) DO UPDATE SET last_step = excluded.last_step WHERE excluded.last_step > totp_steps.last_step`,
      )
      .run(platform, username, step);
    return claimed.changes === 1;
  }
}
