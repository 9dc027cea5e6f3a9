import Database from "better-sqlite3";

/**
 * How long one attempt may wait for another connection's lock inside SQLite. It blocks
 * the event loop while it waits, so it stays short; longer locks (an operator's `sqlite3`
 * session, a backup) are waited out by `retryWhileBusy`, between turns of the event loop.
 */
export const BUSY_TIMEOUT_MS = 100;

const FIRST_RETRY_MS = 10;
const MAX_RETRY_MS = 1_000;

/** True for SQLite's "database is locked" family: the write can be tried again later. */
export function isSqliteBusy(error: unknown): boolean {
  return error instanceof Database.SqliteError && /^SQLITE_(BUSY|LOCKED)/.test(error.code);
}

/**
 * PostgreSQL's refusals that a later try can pass: a serialization failure (two transactions
 * raced), a deadlock broken by the server, a lock not available.
 */
const POSTGRES_BUSY = new Set(["40001", "40P01", "55P03"]);

export function isPostgresBusy(error: unknown): boolean {
  return error instanceof Error && "code" in error && typeof error.code === "string" && POSTGRES_BUSY.has(error.code) && "severity" in error;
}

/** Either database being busy: the work can be tried again later. */
export function isBusy(error: unknown): boolean {
  return isSqliteBusy(error) || isPostgresBusy(error);
}

export interface RetryOptions {
  /** Stop retrying (rejecting with the last busy error) after this long; default: until it works. */
  giveUpAfterMs?: number;
  /** Called before each wait, e.g. to log that the database is locked. */
  onBusy?: (attempt: number, error: unknown) => void;
}

/**
 * Runs `work` (a store transaction), retrying with growing, jittered waits while the
 * database is locked. Any other error is thrown at once.
 */
export async function retryWhileBusy<T>(work: () => T | Promise<T>, options: RetryOptions = {}): Promise<T> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!isBusy(error)) throw error;
      if (options.giveUpAfterMs !== undefined && Date.now() - started >= options.giveUpAfterMs) throw error;
      options.onBusy?.(attempt, error);
      const wait = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (attempt - 1));
      await new Promise((resolve) => setTimeout(resolve, wait / 2 + Math.random() * (wait / 2)));
    }
  }
}
