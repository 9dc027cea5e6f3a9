import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sql, type Kysely } from "kysely";
import type { Schema } from "../schema.js";
import { migrationFiles, migrationsDir, pendingMigrations, refuseNewerSchema, versionOf } from "./schema-version.js";

const MIGRATIONS_DIR = migrationsDir("postgres");

/** The advisory lock `migrate` holds: one process applies migrations at a time. */
const MIGRATION_LOCK = 7_402_611;
/** How often the lock is asked for while another process holds it, and how often that is said. */
const LOCK_LOOK_MS = 250;
const SAY_WAITING_EVERY_MS = 10_000;
/**
 * How long a migration's statement waits for a table's lock (an `ALTER TABLE` waits behind every
 * open transaction that read the table, and every later statement on the table waits behind it):
 * past this it fails, saying what it waited for, rather than hold up the fleet without end.
 */
export const MIGRATION_LOCK_TIMEOUT_MS = 10_000;

/** Where a migration says it is waiting (start-up's log). */
export type MigrationLog = (message: string) => void;

/**
 * Applies numbered `NNN_name.sql` files in order, each in its own transaction, under an advisory
 * lock: coordinators started together apply each migration once; one with nothing to apply starts
 * without the lock (whoever holds it). A database migrated by a newer release is refused before
 * anything is applied. The lock is the session's: `db` must reach PostgreSQL directly, never
 * through a transaction pooler (PostgresAdapter.open uses `listenUrl`).
 */
export async function migratePostgres(db: Kysely<Schema>, options: { dir?: string; log?: MigrationLog } = {}): Promise<string[]> {
  const { dir = MIGRATIONS_DIR, log = (message) => console.warn(message) } = options;
  const files = migrationFiles(dir);
  return db.connection().execute(async (connection) => {
    // Up to date (every coordinator's start but the first after an upgrade): nothing to apply, so
    // no lock to wait for. A session that holds it (a coordinator stopped while it migrates, or
    // while one of its threads opened the store) then holds up only a start that has work to do.
    const before = await appliedMigrations(connection);
    if (before) {
      refuseNewerSchema(before, files);
      if (pendingMigrations(files, before).length === 0) return [];
    }
    await takeMigrationLock(connection, log);
    try {
      await sql`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`.execute(connection);
      const applied = await connection.selectFrom("schema_migrations").select(["version", "name"]).execute();
      refuseNewerSchema(applied, files);
      const done: string[] = [];
      for (const name of pendingMigrations(files, applied)) {
        const version = versionOf(name);
        const text = readFileSync(join(dir, name), "utf8");
        try {
          await connection.transaction().execute(async (trx) => {
            await sql.raw(`SET LOCAL lock_timeout = ${MIGRATION_LOCK_TIMEOUT_MS}; SET LOCAL statement_timeout = 0`).execute(trx);
            await sql.raw(text).execute(trx);
            await trx.insertInto("schema_migrations").values({ version, name, applied_at: new Date().toISOString() }).execute();
          });
        } catch (error) {
          if (!isLockTimeout(error)) throw error;
          throw new Error(`Migration ${name} waited ${MIGRATION_LOCK_TIMEOUT_MS / 1000} s for a lock ${await lockHolders(connection)}; nothing of it was applied. Stop the long transaction or retry.`, { cause: error });
        }
        done.push(name);
      }
      return done;
    } finally {
      await sql`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`.execute(connection);
    }
  });
}

/** The advisory lock, asked for again and again (never waited for in one statement, which `lock_timeout` would end), saying so while another process holds it. */
async function takeMigrationLock(connection: Kysely<Schema>, log: MigrationLog): Promise<void> {
  const started = Date.now();
  let said = started;
  for (;;) {
    const { rows } = await sql<{ taken: boolean }>`SELECT pg_try_advisory_lock(${MIGRATION_LOCK}) AS taken`.execute(connection);
    if (rows[0]?.taken) return;
    if (Date.now() - said >= SAY_WAITING_EVERY_MS) {
      said = Date.now();
      const { rows: holders } = await sql<{ pid: number }>`SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid = ${MIGRATION_LOCK} AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`.execute(connection);
      const who = holders.length > 0 ? holders.map((holder) => `session ${holder.pid}`).join(" and ") : "another session";
      log(`Waiting ${Math.round((said - started) / 1000)} s for ${who} to finish applying migrations (PostgreSQL advisory lock ${MIGRATION_LOCK}); start-up goes on once it has.`);
    }
    await new Promise((resolve) => setTimeout(resolve, LOCK_LOOK_MS));
  }
}

/** What `schema_migrations` says was applied, or null before the first migration made it. */
async function appliedMigrations(connection: Kysely<Schema>): Promise<{ version: number; name: string }[] | null> {
  const { rows } = await sql<{ present: boolean }>`SELECT to_regclass('schema_migrations') IS NOT NULL AS present`.execute(connection);
  if (!rows[0]?.present) return null;
  return connection.selectFrom("schema_migrations").select(["version", "name"]).execute();
}

function isLockTimeout(error: unknown): boolean {
  return error instanceof Error && "code" in error && error.code === "55P03";
}

/**
 * What a migration that timed out may have waited for: the tables other sessions of this database
 * hold locks on, with how long each has been in its transaction (the oldest first).
 */
async function lockHolders(connection: Kysely<Schema>): Promise<string> {
  try {
    const { rows } = await sql<{ relation: string; pid: number; seconds: number | null }>`
      SELECT DISTINCT l.relation::regclass::text AS relation, l.pid, round(extract(epoch FROM now() - a.xact_start))::int AS seconds
      FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.granted AND l.locktype = 'relation' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND l.pid <> pg_backend_pid() AND l.relation::regclass::text NOT LIKE 'pg\\_%'
      ORDER BY seconds DESC NULLS LAST LIMIT 5`.execute(connection);
    if (rows.length === 0) return "held by another session (released since)";
    return `on ${rows.map((row) => `table ${row.relation} held by session ${row.pid}${row.seconds === null ? "" : ` (in a transaction for ${row.seconds} s)`}`).join(", ")}`;
  } catch {
    return "held by another session";
  }
}
