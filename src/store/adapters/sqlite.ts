import Database from "better-sqlite3";
import { CompiledQuery, Kysely, SqliteDialect, SqliteDriver, type DatabaseConnection, type Driver } from "kysely";
import type { StoreAdapter } from "../adapter.js";
import { newOrigin, SqliteChangeFeed, type ChangeFeed } from "../change-feed.js";
import type { Schema } from "../schema.js";
import { isSqliteBusy } from "./busy.js";
import { ReadCache } from "./read-cache.js";
import { StatementCounter } from "./statement-count.js";
import { openDatabase, type Db } from "./sqlite-file.js";

/**
 * The embedded default: the data dir's SQLite file (`sqlite-file.ts` opens it). One connection,
 * used by one query or one transaction at a time: a transaction holds it from `BEGIN IMMEDIATE`
 * (SQLite's one writer, taken before the first read) to its end, and queries from elsewhere in
 * the process wait their turn, so nothing outside a transaction ever runs inside it.
 */
export class SqliteAdapter implements StoreAdapter {
  readonly dialect = "sqlite";
  readonly db: Kysely<Schema>;
  readonly changes: ChangeFeed;
  readonly origin = newOrigin();
  readonly #cache: ReadCache;
  readonly #statements = new StatementCounter();

  constructor(readonly connection: Db) {
    this.db = new Kysely<Schema>({ dialect: new OneAtATimeDialect(connection, this.#statements) });
    this.#cache = new ReadCache(connection, () => this.#statements.writes);
    this.changes = new SqliteChangeFeed(connection);
  }

  static open(file: string): SqliteAdapter {
    return new SqliteAdapter(openDatabase(file));
  }

  transaction<T>(work: (db: Kysely<Schema>) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(work);
  }

  isBusy(error: unknown): boolean {
    return isSqliteBusy(error);
  }

  isDuplicate(error: unknown): boolean {
    return error instanceof Database.SqliteError && /^SQLITE_CONSTRAINT_(UNIQUE|PRIMARYKEY)$/.test(error.code);
  }

  /** Every value kept until the database changes (`ReadCache`): a commit anywhere lets all go. */
  cached<T extends object>(key: string, load: () => Promise<T | undefined>): Promise<T | undefined> {
    return this.#cache.get(key, load);
  }

  /** Nothing to do: this connection's own writes let the kept reads go (`ReadCache`). */
  forget(): void {}

  /** None: a writer waits its turn (`BEGIN IMMEDIATE`, `retryWhileBusy`), it is never refused midway. */
  get retriedTransactions(): number {
    return 0;
  }

  /** Statements run through Kysely; the kept reads' look at `data_version` is not one. */
  get statementCount(): number {
    return this.#statements.count;
  }

  async close(): Promise<void> {
    await this.changes.close();
    await this.db.destroy();
  }
}

class OneAtATimeDialect extends SqliteDialect {
  constructor(
    readonly connection: Db,
    readonly statements: StatementCounter,
  ) {
    super({ database: connection });
  }

  override createDriver(): Driver {
    return new OneAtATimeDriver({ database: this.connection, onCreateConnection: this.statements.watch });
  }
}

/** Kysely's SQLite driver, with turns on its one connection and transactions that take the write lock first. */
class OneAtATimeDriver extends SqliteDriver {
  #busy = false;
  readonly #waiting: (() => void)[] = [];

  override async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#busy) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#busy = true;
    return super.acquireConnection();
  }

  override async releaseConnection(): Promise<void> {
    // Kysely's own lock on the connection first (never contended: turns are taken here).
    await super.releaseConnection();
    const next = this.#waiting.shift();
    if (next) next();
    else this.#busy = false;
  }

  /**
   * IMMEDIATE: the write lock before the first read. A deferred transaction that reads and then
   * writes fails at once (SQLITE_BUSY, no waiting) when another process wrote in between.
   */
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("BEGIN IMMEDIATE"));
  }
}
