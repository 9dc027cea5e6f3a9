import { sql, type RawBuilder } from "kysely";
import type { Store } from "../../src/store/index.js";

/**
 * Raw SQL for tests that look under the store (row counts, a row's bytes), on whichever database
 * the store is: `rows(store, sql\`SELECT … ${value}\`)`. Kysely binds the values for the dialect.
 */
export async function rows<T = Record<string, unknown>>(store: Store, query: RawBuilder<unknown>): Promise<T[]> {
  return (await query.execute(store.adapter.db)).rows as T[];
}

/** The first column of the first row (a count, a value), or undefined. */
export async function value<T = unknown>(store: Store, query: RawBuilder<unknown>): Promise<T | undefined> {
  const [row] = await rows<Record<string, T>>(store, query);
  return row === undefined ? undefined : Object.values(row)[0];
}

/** `SELECT count(*)` of a table (its name is ours, never a user's). */
export async function countRows(store: Store, table: string): Promise<number> {
  return Number(await value(store, sql`SELECT count(*) AS n FROM ${sql.table(table)}`));
}

export { sql };
