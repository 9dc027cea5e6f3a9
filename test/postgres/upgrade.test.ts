import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { PostgresAdapter, migratePostgres } from "../../src/store/index.js";
import { freshDatabase, templateDatabaseUrl } from "../helpers/database.js";
import { eventually } from "../helpers/wait.js";

// Migrations on a live fleet (issue 40): a migration's ALTER must not wait without limit behind a
// long transaction (every later statement on that table would queue behind the ALTER), and a
// coordinator waiting for another's migrations says so. Runs under `npm run test:postgres` only.
const MIGRATIONS = join(import.meta.dirname, "..", "..", "migrations", "postgres");
const MIGRATION_LOCK = 7_402_611;

const opened: { close(): Promise<void> }[] = [];
let dir: string | undefined;
afterEach(async () => {
  for (const thing of opened.splice(0).reverse()) await thing.close().catch(() => undefined);
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** This release's migrations plus one more, `900_later.sql`, in a dir of their own. */
function migrationsWithOneMore(text: string): string {
  dir = mkdtempSync(join(tmpdir(), "action-service-migrations-"));
  for (const name of readdirSync(MIGRATIONS)) copyFileSync(join(MIGRATIONS, name), join(dir, name));
  writeFileSync(join(dir, "900_later.sql"), text);
  return dir;
}

async function session(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => undefined);
  await client.connect();
  opened.push({ close: () => client.end() });
  return client;
}

/** `promise`'s outcome, or "still waiting" after `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<{ value: T } | { error: unknown } | "still waiting"> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"still waiting">((resolve) => (timer = setTimeout(() => resolve("still waiting"), ms)));
  try {
    return await Promise.race([promise.then((value) => ({ value }), (error: unknown) => ({ error })), late]);
  } finally {
    clearTimeout(timer);
  }
}

describe("migrations on a database in use", () => {
  it("an ALTER behind a long transaction fails after its lock timeout, naming the table and the session that holds it, and applies nothing", { timeout: 90_000 }, async () => {
    const url = await freshDatabase(templateDatabaseUrl());
    const reader = await session(url);
    // An operator's transaction left open after reading the actions table.
    await reader.query("BEGIN");
    await reader.query("SELECT count(*) FROM actions");
    const { rows } = await reader.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");

    const adapter = await PostgresAdapter.open(url);
    opened.push(adapter);
    const outcome = await within(migratePostgres(adapter.db, { dir: migrationsWithOneMore("ALTER TABLE actions ADD COLUMN later_note TEXT;") }), 45_000);
    expect(outcome).not.toBe("still waiting");
    expect(outcome).toHaveProperty("error");
    const message = (outcome as { error: Error }).error.message;
    expect(message).toContain("Migration 900_later.sql waited 10 s for a lock on table actions held by session " + rows[0]!.pid);
    expect(message).toContain("Stop the long transaction or retry");
    const applied = await adapter.db.selectFrom("schema_migrations").select("version").where("version", "=", 900).execute();
    expect(applied).toEqual([]);
    await reader.query("ROLLBACK");
  });

  it("a coordinator that waits for another's migrations says so, then goes on once they are done", { timeout: 90_000 }, async () => {
    const url = await freshDatabase(templateDatabaseUrl());
    const adapter = await PostgresAdapter.open(url);
    opened.push(adapter);
    // Another database's coordinator holds the same lock: it is no one's business here.
    const elsewhere = await session(await freshDatabase(templateDatabaseUrl()));
    await elsewhere.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    // Another coordinator, started at the same moment, is applying the release's migrations.
    const other = await session(url);
    await other.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    const { rows } = await other.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    const said: string[] = [];
    const migrating = migratePostgres(adapter.db, { dir: migrationsWithOneMore("SELECT 1;"), log: (message) => said.push(message) });
    await eventually(() => said.find((line) => line.includes("to finish applying migrations")), { what: "a log line saying it waits for the migration lock" });
    expect(said[0]).toMatch(new RegExp(`^Waiting \\d+ s for session ${rows[0]!.pid} to finish applying migrations`));
    await other.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]);
    expect(await migrating).toEqual(["900_later.sql"]);
  });

  it("a coordinator on an up-to-date database starts at once, whoever holds the migration lock", { timeout: 90_000 }, async () => {
    const url = await freshDatabase(templateDatabaseUrl());
    // A coordinator stopped (SIGSTOP, a paused VM) while it held the lock: it may never let go.
    const stalled = await session(url);
    await stalled.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    const said: string[] = [];
    const opening = PostgresAdapter.open(url, { log: (message) => said.push(message) });
    const outcome = await within(opening, 15_000);
    if (outcome !== "still waiting" && "value" in outcome) opened.push(outcome.value);
    else void opening.then((adapter) => adapter.close()).catch(() => undefined);
    expect(outcome).toHaveProperty("value");
    expect(said).toEqual([]);
    // With a migration to apply, it does wait: the lock still keeps two from applying it at once.
    const migrating = migratePostgres((outcome as { value: PostgresAdapter }).value.db, { dir: migrationsWithOneMore("SELECT 1;"), log: () => undefined });
    expect(await within(migrating, 2_000)).toBe("still waiting");
    await stalled.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]);
    expect(await migrating).toEqual(["900_later.sql"]);
  });
});
