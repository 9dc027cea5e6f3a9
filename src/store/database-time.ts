import { sql, type RawBuilder } from "kysely";
import type { Dialect } from "./adapter.js";

/**
 * The time an expiry is judged by, in a statement, as the store keeps times (ISO-8601 text,
 * `YYYY-MM-DDTHH:MM:SS.sssZ`), `plusMs` later. On PostgreSQL the database's own clock,
 * `clock_timestamp()` read when the statement runs (not when it was sent, nor at the transaction's
 * start): every coordinator judges a lease by one clock, whatever its machine's says (DESIGN §11).
 * On SQLite, one machine and one clock: the process's `now`, as given (a test's clock moves it).
 */
export function timeIn(dialect: Dialect, now: string, plusMs = 0): RawBuilder<string> {
  if (dialect === "sqlite") return sql<string>`${new Date(Date.parse(now) + plusMs).toISOString()}`;
  return sql<string>`to_char((clock_timestamp() + ${plusMs} * interval '1 millisecond') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** The database's clock in milliseconds since 1970, in a statement (PostgreSQL). */
export const databaseMs: RawBuilder<number> = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::float8`;
