import { sql } from "kysely";
import { databaseMs } from "../database-time.js";
import type { Queries } from "../queries.js";

/**
 * Token buckets shared by every coordinator (DESIGN §11: the per-key rate limit is shared). One
 * statement per take, atomic under concurrent takes from any machine: the bucket refills by the
 * time since its last take, up to `perMinute`, and one token is taken when there is one. Time is the
 * database's clock, read in the statement: coordinators whose clocks disagree refill one bucket at
 * one rate (DESIGN §11). Written for PostgreSQL (`::float8`); on one machine the buckets stay in the
 * process (`engine/access/rate-limit.ts`).
 */
export class RateLimitRepository {
  constructor(private readonly q: Queries) {}

  /**
   * Takes a token from `caller`'s bucket now. Returns whether one was taken and the tokens the
   * bucket holds after the take.
   */
  async take(caller: string, { perMinute }: { perMinute: number }): Promise<{ taken: boolean; tokens: number }> {
    const perMs = perMinute / 60_000;
    const refilled = sql<number>`least(${perMinute}::float8, rate_limits.tokens + greatest(0, ${databaseMs} - rate_limits.at) * ${perMs}::float8)`;
    const row = await this.q.db
      .insertInto("rate_limits")
      .values({ caller, tokens: perMinute - 1, at: databaseMs, taken: 1 })
      .onConflict((oc) =>
        oc.column("caller").doUpdateSet({
          tokens: sql<number>`case when ${refilled} >= 1 then ${refilled} - 1 else ${refilled} end`,
          taken: sql<number>`case when ${refilled} >= 1 then 1 else 0 end`,
          at: databaseMs,
        }),
      )
      .returning(["tokens", "taken"])
      .executeTakeFirstOrThrow();
    return { taken: row.taken === 1, tokens: row.tokens };
  }

  /** Buckets full again (untouched for a minute or more) are the same as none. */
  async purge(): Promise<void> {
    await this.q.db.deleteFrom("rate_limits").where("at", "<", sql<number>`${databaseMs} - 60000`).execute();
  }
}
