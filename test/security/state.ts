import type { Store } from "../../src/store/index.js";
import { countRows, rows, sql, value } from "../helpers/sql.js";

/** Tables a request could change; a refused request must leave every count as it was. */
const COUNTED_TABLES = [
  "actions",
  "accounts",
  "credit_ledger",
  "idempotency_keys",
  "challenges",
  "sign_in_links",
  "api_keys",
  "workspaces",
  "events",
  "webhook_endpoints",
  "webhook_deliveries",
  "feedback",
  "failure_screenshots",
  "routines",
  "routine_versions",
] as const;

/** A cheap picture of the database: row counts, balances, and how many rows this connection has ever written. */
export interface StateSnapshot {
  counts: Record<(typeof COUNTED_TABLES)[number], number>;
  /** `workspace_id=balance` for every workspace. */
  balances: string;
  /**
   * What was written. SQLite: `total_changes()` of the service's one connection: an UPDATE (a
   * changed username, a canceled action) moves it even when no count does, and so does a write
   * undone within the same request (a refusal should not write at all). PostgreSQL (many
   * connections): a digest of every counted table's rows, which any committed write changes.
   */
  writes: number | string;
}

export async function readState(store: Store): Promise<StateSnapshot> {
  const counts = Object.fromEntries(await Promise.all(COUNTED_TABLES.map(async (table) => [table, await countRows(store, table)] as const)));
  const balances = (await rows<{ id: string; balance: number }>(store, sql`SELECT id, balance FROM workspaces ORDER BY id`)).map((row) => `${row.id}=${row.balance}`).join(",");
  const writes =
    store.sqlite !== undefined
      ? (store.sqlite.prepare("SELECT total_changes()").pluck().get() as number)
      : (
          await Promise.all(
            COUNTED_TABLES.map((table) => value<string>(store, sql`SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM ${sql.table(table)} t`)),
          )
        ).join(":");
  return { counts: counts as StateSnapshot["counts"], balances, writes };
}

/** What differs between two snapshots, in words (empty when nothing does). */
export function stateDifference(before: StateSnapshot, after: StateSnapshot): string[] {
  const differences = COUNTED_TABLES.filter((table) => before.counts[table] !== after.counts[table]).map(
    (table) => `${table}: ${before.counts[table]} → ${after.counts[table]} rows`,
  );
  if (before.balances !== after.balances) differences.push(`balances: ${before.balances} → ${after.balances}`);
  if (before.writes !== after.writes) differences.push(typeof before.writes === "number" && typeof after.writes === "number" ? `rows written: ${after.writes - before.writes}` : "rows written");
  return differences;
}
