import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import type { StoreAdapter, TransactionOptions } from "../adapter.js";
import { PostgresChangeFeed, type ChangeFeed } from "../change-feed.js";
import type { Schema } from "../schema.js";
import { isPostgresBusy } from "./busy.js";
import { StatementCounter } from "./statement-count.js";

/** `migrations/postgres` at the package root: the same path from `src/store/adapters` and `dist/store/adapters`. */
const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "migrations", "postgres");

/** Connections per coordinator: requests, the runner and the outbox share them. */
const POOL_SIZE = 10;
/**
 * Lease renewal's statements wait at most this long on the server (DESIGN §11: a renewal that
 * waits longer than a lease is of no use; the runner stops its runs before its lease would end).
 */
const LEASE_STATEMENT_TIMEOUT_MS = 5_000;
/** A transaction PostgreSQL refused to commit (it raced another) is run again, at most this often. */
const MAX_ATTEMPTS = 50;
const FIRST_RETRY_MS = 2;
const MAX_RETRY_MS = 200;
/** The advisory lock `migrate` holds: one process applies migrations at a time. */
const MIGRATION_LOCK = 7_402_611;

const INT8 = 20;
/**
 * 64-bit integers (`seq` columns, `count(*)`, `sum()` over integers) as numbers, as SQLite returns
 * them: every value the store keeps is far below 2^53.
 */
function typeParser(oid: number, format?: string): (value: string) => unknown {
  if (oid === INT8) return (value) => Number(value);
  return (pg.types.getTypeParser as (oid: number, format?: string) => (value: string) => unknown)(oid, format);
}

/**
 * Several machines: one PostgreSQL database (15 or later) that every coordinator shares.
 * Transactions are `SERIALIZABLE`, so a transaction written for SQLite's single writer (read,
 * check, write) keeps its meaning when two coordinators run it at once: PostgreSQL refuses the
 * one that raced, and it runs again here.
 */
export class PostgresAdapter implements StoreAdapter {
  readonly dialect = "postgres";
  readonly db: Kysely<Schema>;
  readonly changes: ChangeFeed;
  /**
   * Lease renewal's own connection (DESIGN §11), outside the pool: a renewal never waits behind
   * requests for a connection, nor behind a transaction this process has open.
   */
  readonly leaseDb: Kysely<Schema>;
  readonly #statements = new StatementCounter();

  constructor(
    readonly pool: pg.Pool,
    /** Where the database is (it carries the password, if any: never logged). */
    readonly url: string,
  ) {
    this.db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool, onCreateConnection: this.#statements.watch }) });
    this.changes = new PostgresChangeFeed(url);
    const leasePool = new pg.Pool({
      connectionString: url,
      max: 1,
      keepAlive: true,
      connectionTimeoutMillis: LEASE_STATEMENT_TIMEOUT_MS,
      options: `-c statement_timeout=${LEASE_STATEMENT_TIMEOUT_MS} -c lock_timeout=${LEASE_STATEMENT_TIMEOUT_MS}`,
      types: { getTypeParser: typeParser as typeof pg.types.getTypeParser },
    });
    leasePool.on("error", () => undefined);
    this.leaseDb = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: leasePool }) });
  }

  /** Connects (nothing is asked of the server until the first query) and applies pending migrations. */
  static async open(url: string): Promise<PostgresAdapter> {
    const pool = new pg.Pool({ connectionString: url, max: POOL_SIZE, types: { getTypeParser: typeParser as typeof pg.types.getTypeParser } });
    // An idle connection the server dropped must not end the process: the pool replaces it.
    pool.on("error", () => undefined);
    const adapter = new PostgresAdapter(pool, url);
    try {
      await migratePostgres(adapter.db);
    } catch (error) {
      await adapter.close();
      throw error;
    }
    return adapter;
  }

  async transaction<T>(work: (db: Kysely<Schema>) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.db
          .transaction()
          .setIsolationLevel(options.locksRows ? "read committed" : "serializable")
          .execute(work);
      } catch (error) {
        if (!isPostgresBusy(error) || attempt >= MAX_ATTEMPTS) throw error;
        const wait = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (attempt - 1));
        await new Promise((resolve) => setTimeout(resolve, wait / 2 + Math.random() * (wait / 2)));
      }
    }
  }

  isBusy(error: unknown): boolean {
    return isPostgresBusy(error);
  }

  isDuplicate(error: unknown): boolean {
    return error instanceof Error && "code" in error && error.code === "23505";
  }

  get statementCount(): number {
    return this.#statements.count;
  }

  /** Nothing is kept: another coordinator's commit cannot be seen cheaply before every read. */
  cached<T extends object>(_key: string, load: () => Promise<T | undefined>): Promise<T | undefined> {
    return load();
  }

  async close(): Promise<void> {
    await this.changes.close();
    await this.leaseDb.destroy();
    await this.db.destroy();
  }
}

/**
 * Applies numbered `NNN_name.sql` files in order, each in its own transaction, under an advisory
 * lock: coordinators started together apply each migration once.
 */
export async function migratePostgres(db: Kysely<Schema>, dir: string = MIGRATIONS_DIR): Promise<string[]> {
  const files = readdirSync(dir)
    .filter((name) => /^\d+_.+\.sql$/.test(name))
    .sort();
  return db.connection().execute(async (connection) => {
    await sql`SELECT pg_advisory_lock(${MIGRATION_LOCK})`.execute(connection);
    try {
      await sql`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`.execute(connection);
      const applied = new Set((await connection.selectFrom("schema_migrations").select("version").execute()).map((row) => row.version));
      const done: string[] = [];
      for (const name of files) {
        const version = Number.parseInt(name, 10);
        if (applied.has(version)) continue;
        const text = readFileSync(join(dir, name), "utf8");
        await connection.transaction().execute(async (trx) => {
          await sql.raw(text).execute(trx);
          await trx.insertInto("schema_migrations").values({ version, name, applied_at: new Date().toISOString() }).execute();
        });
        done.push(name);
      }
      return done;
    } finally {
      await sql`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`.execute(connection);
    }
  });
}
