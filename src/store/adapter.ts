import type { Kysely } from "kysely";
import type { ChangeFeed } from "./change-feed.js";
import type { Schema } from "./schema.js";

export type Dialect = "sqlite" | "postgres";

/**
 * One database behind the store (DESIGN §11): the data dir's SQLite file on one machine, a
 * PostgreSQL database shared by coordinators on several. Repositories write each statement once
 * with Kysely against `db`; what the two do differently lives here and in the adapters.
 */
export interface StoreAdapter {
  readonly dialect: Dialect;
  readonly db: Kysely<Schema>;
  /**
   * Runs `work` in a transaction that sees and writes as if it were alone: SQLite's single writer
   * (`BEGIN IMMEDIATE`), PostgreSQL's `SERIALIZABLE` (retried here when PostgreSQL refuses to commit
   * a transaction that raced another; `work` may run more than once and must only touch the store).
   */
  transaction<T>(work: (db: Kysely<Schema>) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** Wake-ups for what other processes commit. */
  readonly changes: ChangeFeed;
  /**
   * This store's name among the fleet's writers, fresh each time it opens: on PostgreSQL the
   * notifications of what it commits carry it (`Change.origin`), so a follower can tell its own
   * writes from others'.
   */
  readonly origin: string;
  /** Whether a failure is the database being busy (locked, or a serialization conflict): worth trying again. */
  isBusy(error: unknown): boolean;
  /** Whether a failure is a UNIQUE or PRIMARY KEY constraint refusing a duplicate row. */
  isDuplicate(error: unknown): boolean;
  /**
   * Kept reads (the key of every request, an ended action polled by its client): `load()`'s value,
   * kept until it may have changed. SQLite keeps every value until the database changes (any
   * commit). PostgreSQL keeps a value only when `droppedBy` names the change-feed subject whose
   * change drops it (`key:<id>`, `action:<id>`), and never inside a transaction (`inTransaction`:
   * its reads see its own uncommitted writes, and must be its snapshot's).
   */
  cached<T extends object>(key: string, load: () => Promise<T | undefined>, keep: KeptRead<T>): Promise<T | undefined>;
  /** This store changed `subject` (`key:<id>`): a kept value it drops goes now, before the feed says so. */
  forget(subject: string): void;
  /**
   * Statements sent through `db` since the adapter opened, BEGIN and COMMIT included (on
   * PostgreSQL, round trips to the server): for benchmarks, e.g. statements per action.
   */
  readonly statementCount: number;
  /**
   * Transactions the database refused and that were run again (PostgreSQL: a serialization
   * failure, a deadlock, a lock not available; SQLite waits for its one writer instead: 0).
   */
  readonly retriedTransactions: number;
  close(): Promise<void>;
}

export interface TransactionOptions {
  /**
   * PostgreSQL only: READ COMMITTED instead of SERIALIZABLE, for work that takes the row locks it
   * needs itself (a claim with `FOR UPDATE SKIP LOCKED`) and must not fail because another
   * coordinator claimed something else at the same moment.
   */
  locksRows?: boolean;
}

/** How a kept read may be kept (`StoreAdapter.cached`). */
export interface KeptRead<T> {
  /** The subject whose change drops the value, or undefined when it changes without one (PostgreSQL then does not keep it). */
  droppedBy: (value: T) => string | undefined;
  /** Whether the read is made inside a transaction. */
  inTransaction: boolean;
}
