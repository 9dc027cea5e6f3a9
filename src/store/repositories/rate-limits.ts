import { sql } from "kysely";
import { databaseMs } from "../database-time.js";
import type { Queries } from "../queries.js";

/**
 * Token buckets shared by every coordinator (DESIGN §11: the per-key rate limit is shared). One
 * statement per take, atomic under concurrent takes from any machine: the bucket refills by the
 * time since its last take, up to `perMinute`, and up to `count` tokens are taken, as many as it
 * holds whole (a coordinator takes for every request of a caller that waited meanwhile at once:
 * `engine/access/rate-limit.ts`). Time is the database's clock, read in the statement: coordinators
 * whose clocks disagree refill one bucket at one rate (DESIGN §11). The table is unlogged and the
 * update touches no indexed column (migrations/postgres 013): a take writes no WAL and no index.
 * Written for PostgreSQL (`::float8`); on one machine the buckets stay in the process.
 */
export class RateLimitRepository {
  constructor(private readonly q: Queries) {}

  /**
   * Takes up to `count` tokens from `caller`'s bucket now. Returns how many were taken and the
   * tokens the bucket holds after the take.
   */
  async take(caller: string, { perMinute, count = 1 }: { perMinute: number; count?: number }): Promise<{ taken: number; tokens: number }> {
    const perMs = perMinute / 60_000;
    const refilled = sql<number>`least(${perMinute}::float8, rate_limits.tokens + greatest(0, ${databaseMs} - rate_limits.at) * ${perMs}::float8)`;
    const takes = sql<number>`least(${count}::integer, floor(${refilled})::integer)`;
    const first = Math.min(count, perMinute);
    const row = await this.q.db
      .insertInto("rate_limits")
      .values({ caller, tokens: perMinute - first, at: databaseMs, taken: first })
      .onConflict((oc) =>
        oc.column("caller").doUpdateSet({
          // Both from the row as it was: every SET expression reads the old row.
          tokens: sql<number>`${refilled} - ${takes}`,
          taken: takes,
          at: databaseMs,
        }),
      )
      .returning(["tokens", "taken"])
      .executeTakeFirstOrThrow();
    return { taken: row.taken, tokens: row.tokens };
  }

  /** Buckets full again (untouched for a minute or more) are the same as none. */
  async purge(): Promise<void> {
    await this.q.db.deleteFrom("rate_limits").where("at", "<", sql<number>`${databaseMs} - 60000`).execute();
  }
}
