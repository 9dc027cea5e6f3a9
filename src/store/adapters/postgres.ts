import { Kysely, PostgresDialect, sql, type PostgresPool } from "kysely";
import pg from "pg";
import type { KeptRead, StoreAdapter, TransactionOptions } from "../adapter.js";
import { applicationName, KEEP_ALIVE_AFTER_MS, newOrigin, PostgresChangeFeed, type ChangeFeed } from "../change-feed.js";
import type { Schema } from "../schema.js";
import { CommitUnknownError, DatabaseUnreachableError, isConnectionLost, isPostgresBusy } from "./busy.js";
import { FeedCache } from "./feed-cache.js";
import { migratePostgres, type MigrationLog } from "./postgres-migrate.js";
import { StatementCounter } from "./statement-count.js";

export { migratePostgres } from "./postgres-migrate.js";

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

/**
 * Every session's limits (docs/decisions.md, "Connections"), sent when it opens:
 * - a transaction left idle this long (its coordinator stopped by the kernel, a GC, a frozen
 *   network) is ended by the server, and its locks freed: no member holds the others up longer;
 * - a statement waits this long for a lock, then fails (55P03) and its transaction runs again;
 * - no statement runs longer: the longest the store sends (a housekeeping delete) takes well under
 *   a second; migrations set their own.
 */
export const SESSION_TIMEOUTS = { idle_in_transaction_session_timeout: 5_000, lock_timeout: 3_000, statement_timeout: 30_000 } as const;
/**
 * The same limits set by a transaction for itself (`SET LOCAL`), in one statement: through
 * PgBouncer in transaction mode a session is shared and takes no settings when it opens (PgBouncer
 * refuses them), so each transaction, whichever server session it is given, carries its own.
 */
const TRANSACTION_TIMEOUTS = sql.raw(`SELECT ${Object.entries(SESSION_TIMEOUTS).map(([name, ms]) => `set_config('${name}', '${ms}', true)`).join(", ")}`);
/** Opening a connection (TCP, TLS, authentication) may take this long. */
const CONNECT_TIMEOUT_MS = 5_000;
/**
 * PostgreSQL unreachable (restarting: refused or "starting up"), or a transaction's connection lost
 * before its COMMIT was sent: tried again for this long before the caller hears of it.
 */
const UNREACHABLE_RETRY_MS = 30_000;
const FIRST_RECONNECT_MS = 50;
const MAX_RECONNECT_MS = 1_000;

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
  readonly origin: string;
  /**
   * Lease renewal's own connection (DESIGN §11), outside the pool: a renewal never waits behind
   * requests for a connection, nor behind a transaction this process has open.
   */
  readonly leaseDb: Kysely<Schema>;
  readonly #statements = new StatementCounter();
  #retried = 0;
  readonly #cache: FeedCache;

  readonly pool: pg.Pool;
  /**
   * `url` goes through a pooler in transaction mode (PgBouncer) and `listenUrl` is PostgreSQL
   * itself: the pool's sessions take no settings, each transaction sets its limits.
   */
  readonly pooled: boolean;

  constructor(
    connections: PostgresPool & { pool: pg.Pool; origin: string },
    /** Where the database is (it carries the password, if any: never logged). */
    readonly url: string,
    /**
     * A direct connection to the same database (`ACTION_SERVICE_DATABASE_LISTEN_URL`, default
     * `url`): what needs a session of its own — `LISTEN`, lease renewal, the migrations' advisory
     * lock — never goes through a pooler. Never logged either.
     */
    readonly listenUrl: string = url,
  ) {
    this.origin = connections.origin;
    this.pool = connections.pool;
    this.pooled = listenUrl !== url;
    this.db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: connections, onCreateConnection: this.#statements.watch }) });
    const changes = new PostgresChangeFeed(listenUrl);
    this.changes = changes;
    this.#cache = new FeedCache(changes);
    // Direct: a renewal never queues in a pooler behind requests, and keeps its own limits.
    const leasePool = directPool(listenUrl, this.origin, { statement_timeout: LEASE_STATEMENT_TIMEOUT_MS, lock_timeout: LEASE_STATEMENT_TIMEOUT_MS }, LEASE_STATEMENT_TIMEOUT_MS);
    this.leaseDb = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: leasePool }) });
  }

  /**
   * Connects (nothing is asked of the server until the first query), refuses a database migrated
   * by a newer action-service, and applies pending migrations (over `listenUrl`: the migrations'
   * advisory lock is a session's, which a pooler in transaction mode does not keep).
   */
  static async open(url: string, options: { listenUrl?: string | undefined; log?: MigrationLog } = {}): Promise<PostgresAdapter> {
    const listenUrl = options.listenUrl ?? url;
    const adapter = new PostgresAdapter(connectionPool(url, { pooled: listenUrl !== url }), url, listenUrl);
    const migrations = adapter.pooled ? new Kysely<Schema>({ dialect: new PostgresDialect({ pool: directPool(listenUrl, adapter.origin, SESSION_TIMEOUTS, CONNECT_TIMEOUT_MS) }) }) : adapter.db;
    try {
      await migratePostgres(migrations, { log: options.log });
    } catch (error) {
      await adapter.close();
      throw error;
    } finally {
      if (migrations !== adapter.db) await migrations.destroy();
    }
    return adapter;
  }

  /**
   * Runs `work` in a transaction, again when PostgreSQL refused it (a race, a lock not available)
   * or its connection was lost before COMMIT was sent (it changed nothing). A connection lost
   * while COMMIT was on its way is a `CommitUnknownError`, never retried here.
   */
  async transaction<T>(work: (db: Kysely<Schema>) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      let committing = false;
      try {
        return await this.db
          .transaction()
          .setIsolationLevel(options.locksRows ? "read committed" : "serializable")
          .execute(async (trx) => {
            if (this.pooled) await TRANSACTION_TIMEOUTS.execute(trx);
            const result = await work(trx);
            committing = true;
            return result;
          });
      } catch (error) {
        if (isPostgresBusy(error)) {
          if (attempt >= MAX_ATTEMPTS) throw error;
          this.#retried += 1;
          await pause(Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (attempt - 1)));
          continue;
        }
        if (!isConnectionLost(error)) throw error;
        if (committing) throw new CommitUnknownError(error);
        if (Date.now() - started >= UNREACHABLE_RETRY_MS) throw new DatabaseUnreachableError(error);
        await pause(Math.min(MAX_RECONNECT_MS, FIRST_RECONNECT_MS * 2 ** (attempt - 1)));
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

  get retriedTransactions(): number {
    return this.#retried;
  }

  /**
   * Kept while the change feed vouches that nothing dropped it (`FeedCache`): values `droppedBy`
   * names a subject for, read outside a transaction.
   */
  cached<T extends object>(key: string, load: () => Promise<T | undefined>, keep: KeptRead<T>): Promise<T | undefined> {
    return keep.inTransaction ? load() : this.#cache.get(key, load, keep.droppedBy);
  }

  forget(subject: string): void {
    this.#cache.forget(subject);
  }

  async close(): Promise<void> {
    this.#cache.close();
    await this.changes.close();
    await this.leaseDb.destroy();
    await this.db.destroy();
  }
}

/**
 * The pool every store statement goes through: sessions with their timeouts and TCP keep-alive;
 * a connection that ends while checked out (PostgreSQL restarting) fails its query instead of
 * ending the process; a connection that cannot open yet (the server restarting) is tried again.
 */
function connectionPool(url: string, { pooled }: { pooled: boolean }): PostgresPool & { pool: pg.Pool; origin: string } {
  const origin = newOrigin();
  const pool = new pg.Pool({
    connectionString: url,
    // The triggers name the writer of every change by it (migrations/postgres 010). PgBouncer
    // keeps it per client and sets it on whichever server session runs the client's transaction.
    application_name: applicationName(origin),
    max: POOL_SIZE,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEP_ALIVE_AFTER_MS,
    // Through a pooler, each transaction sets them instead (TRANSACTION_TIMEOUTS).
    ...(pooled ? {} : SESSION_TIMEOUTS),
    types: { getTypeParser: typeParser as typeof pg.types.getTypeParser },
  });
  // An idle connection the server dropped: the pool replaces it.
  pool.on("error", () => undefined);
  // pg-pool takes its own error listener off a client while it is checked out, and node-postgres
  // emits `error` when the connection ends: without a listener of its own, that ended the
  // process. The query under way fails with the error (and the transaction is retried, above).
  pool.on("connect", (client) => client.on("error", () => undefined));
  return {
    pool,
    origin,
    connect: async () => {
      const started = Date.now();
      for (let attempt = 1; ; attempt++) {
        try {
          return await pool.connect();
        } catch (error) {
          // Not a server restarting (PgBouncer ends the connection with 08P01): trying again cannot help.
          if (isPoolerRefusal(error)) throw poolerWithoutListenUrl(error);
          // Nothing was sent on a connection that never opened: trying again is always safe.
          if (!isConnectionLost(error) || Date.now() - started >= UNREACHABLE_RETRY_MS) throw isConnectionLost(error) ? new DatabaseUnreachableError(error) : error;
          await pause(Math.min(MAX_RECONNECT_MS, FIRST_RECONNECT_MS * 2 ** (attempt - 1)));
        }
      }
    },
    end: () => pool.end(),
  };
}

/** One session on PostgreSQL itself (never a pooler), with `settings` sent when it opens: lease renewal, migrations. */
function directPool(url: string, origin: string, settings: Partial<Record<keyof typeof SESSION_TIMEOUTS, number>>, connectTimeoutMs: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: 1,
    keepAlive: true,
    connectionTimeoutMillis: connectTimeoutMs,
    options: Object.entries(settings).map(([name, ms]) => `-c ${name}=${ms}`).join(" "),
    application_name: applicationName(origin),
    types: { getTypeParser: typeParser as typeof pg.types.getTypeParser },
  });
  pool.on("error", () => undefined);
  // As for the pool's connections (connectionPool): a statement under way when PostgreSQL restarts
  // fails, and must not end the process.
  pool.on("connect", (client) => client.on("error", () => undefined));
  return pool;
}

/** PgBouncer's answer to a session that asks for settings when it opens ("unsupported startup parameter"). */
function isPoolerRefusal(error: unknown): boolean {
  return error instanceof Error && "code" in error && error.code === "08P01" && /unsupported startup parameter/i.test(error.message);
}

function poolerWithoutListenUrl(error: unknown): Error {
  return new Error(
    "ACTION_SERVICE_DATABASE_URL leads to a connection pooler (it refused the session limits asked for when a connection opens). Set ACTION_SERVICE_DATABASE_LISTEN_URL to a direct connection to PostgreSQL: LISTEN, lease renewal and migrations use it, and each transaction through the pooler then sets its own limits (docs/fleet.md).",
    { cause: error },
  );
}

/** Waits between half and all of `ms` (jitter: retries of many sessions do not come back together). */
function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms / 2 + Math.random() * (ms / 2)));
}
