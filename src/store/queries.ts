import { AsyncLocalStorage } from "node:async_hooks";
import { sql, type Kysely } from "kysely";
import type { StoreAdapter, TransactionOptions } from "./adapter.js";
import type { Schema } from "./schema.js";

interface Scope {
  db: Kysely<Schema>;
  /** False once the transaction has ended: work that outlived it (a timer set inside) uses the database again. */
  open: boolean;
  savepoints: number;
  /** What to do once the outermost transaction has committed, each with what to do instead if it does not. */
  afterCommit: { committed: () => void; rolledBack?: () => void }[];
}

/**
 * Where a repository's statement goes: the transaction open in this asynchronous context, else
 * the database. A transaction follows its work through every `await` (AsyncLocalStorage), so a
 * function that writes through the store joins the transaction its caller opened, as it did when
 * SQLite's transactions were synchronous, and a transaction opened inside another is a savepoint.
 */
export class Queries {
  readonly #scope = new AsyncLocalStorage<Scope>();

  constructor(readonly adapter: StoreAdapter) {}

  get db(): Kysely<Schema> {
    const scope = this.#scope.getStore();
    return scope?.open ? scope.db : this.adapter.db;
  }

  get inTransaction(): boolean {
    return this.#scope.getStore()?.open ?? false;
  }

  /** A kept read (`StoreAdapter.cached`): `droppedBy` names the subject whose change drops it. */
  cached<T extends object>(key: string, load: () => Promise<T | undefined>, droppedBy: (value: T) => string | undefined): Promise<T | undefined> {
    return this.adapter.cached(key, load, { droppedBy, inTransaction: this.inTransaction });
  }

  /**
   * This context changed `subject`: kept reads it drops go now, and again once the transaction has
   * ended (a read meanwhile may have kept what it saw before the commit).
   */
  changed(subject: string): void {
    this.adapter.forget(subject);
    const forget = (): void => this.adapter.forget(subject);
    this.afterCommit(forget, forget);
  }

  transaction<T>(work: () => Promise<T>, options?: TransactionOptions): Promise<T> {
    const scope = this.#scope.getStore();
    if (scope?.open) return this.#savepoint(scope, work);
    // A new scope per attempt: what a failed attempt asked to do after commit is undone with it;
    // a transaction that commits does so in its last attempt.
    const attempts: Scope[] = [];
    const result = this.adapter.transaction(async (db) => {
      const opened: Scope = { db, open: true, savepoints: 0, afterCommit: [] };
      attempts.push(opened);
      try {
        return await this.#scope.run(opened, work);
      } finally {
        opened.open = false;
      }
    }, options);
    return result.then(
      (value) => {
        for (const attempt of attempts) this.#ended(attempt.afterCommit, attempt === attempts.at(-1));
        return value;
      },
      (error: unknown) => {
        for (const attempt of attempts) this.#ended(attempt.afterCommit, false);
        throw error;
      },
    );
  }

  /**
   * Runs `callback` once what this context writes is committed: at once outside a transaction,
   * else after the outermost one commits. Listeners told of a change then read it from any
   * connection, on any machine. If it rolls back (or the savepoint it was asked in does),
   * `rolledBack` runs instead.
   */
  afterCommit(callback: () => void, rolledBack?: () => void): void {
    const scope = this.#scope.getStore();
    if (scope?.open) scope.afterCommit.push({ committed: callback, rolledBack });
    else this.outside(callback);
  }

  /** Runs what was asked for a transaction (or savepoint) that has ended, committed or not. */
  #ended(callbacks: Scope["afterCommit"], committed: boolean): void {
    for (const callback of callbacks) {
      const run = committed ? callback.committed : callback.rolledBack;
      if (run) this.outside(run);
    }
  }

  /** Runs `work` outside any transaction of this context (what it starts does not join one). */
  outside<T>(work: () => T): T {
    return this.#scope.exit(work);
  }

  /** A transaction inside another: undone alone when its work throws, kept only if the outer one commits. */
  async #savepoint<T>(scope: Scope, work: () => Promise<T>): Promise<T> {
    const name = sql.raw(`nested_${++scope.savepoints}`);
    const callbacks = scope.afterCommit.length;
    await sql`SAVEPOINT ${name}`.execute(scope.db);
    try {
      const result = await work();
      await sql`RELEASE SAVEPOINT ${name}`.execute(scope.db);
      return result;
    } catch (error) {
      await sql`ROLLBACK TO SAVEPOINT ${name}`.execute(scope.db);
      await sql`RELEASE SAVEPOINT ${name}`.execute(scope.db);
      this.#ended(scope.afterCommit.splice(callbacks), false);
      throw error;
    } finally {
      scope.savepoints--;
    }
  }
}
