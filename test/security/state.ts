import type { Db } from "../../src/store/index.js";

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
] as const;

/** A cheap picture of the database: row counts, balances, and how many rows this connection has ever written. */
export interface StateSnapshot {
  counts: Record<(typeof COUNTED_TABLES)[number], number>;
  /** `workspace_id=balance` for every workspace. */
  balances: string;
  /**
   * SQLite's `total_changes()` for the service's one connection: an UPDATE (a changed
   * username, a canceled action) moves it even when no count does, and so does a write
   * undone within the same request (a refusal should not write at all).
   */
  writes: number;
}

export function readState(db: Db): StateSnapshot {
  const counts = Object.fromEntries(COUNTED_TABLES.map((table) => [table, db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number]));
  const balances = (db.prepare("SELECT id, balance FROM workspaces ORDER BY id").all() as { id: string; balance: number }[])
    .map((row) => `${row.id}=${row.balance}`)
    .join(",");
  const writes = db.prepare("SELECT total_changes()").pluck().get() as number;
  return { counts: counts as StateSnapshot["counts"], balances, writes };
}

/** What differs between two snapshots, in words (empty when nothing does). */
export function stateDifference(before: StateSnapshot, after: StateSnapshot): string[] {
  const differences = COUNTED_TABLES.filter((table) => before.counts[table] !== after.counts[table]).map(
    (table) => `${table}: ${before.counts[table]} → ${after.counts[table]} rows`,
  );
  if (before.balances !== after.balances) differences.push(`balances: ${before.balances} → ${after.balances}`);
  if (before.writes !== after.writes) differences.push(`rows written: ${after.writes - before.writes}`);
  return differences;
}
