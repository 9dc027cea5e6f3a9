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
 * raced), a deadlock broken by the server, a lock not available (`lock_timeout`: another session
 * held it too long). Each ends the transaction, which changed nothing. A statement cancelled by
 * `statement_timeout` (57014) is not one: the same statement would run as long again.
 */
const POSTGRES_BUSY = new Set(["40001", "40P01", "55P03"]);

/**
 * PostgreSQL could not be reached, or the connection was lost before the transaction's COMMIT was
 * sent (docs/decisions.md, "Connections"): nothing was changed, and it may be tried again later.
 */
export class DatabaseUnreachableError extends Error {
  constructor(cause: unknown) {
    super(`PostgreSQL cannot be reached (${describe(cause)}); nothing was changed.`, { cause });
    this.name = "DatabaseUnreachableError";
  }
}

/**
 * The connection was lost while COMMIT was on its way: the transaction may or may not have been
 * applied. Never retried blindly; only work that checks its own effect may run again.
 */
export class CommitUnknownError extends Error {
  constructor(cause: unknown) {
    super(`The connection to PostgreSQL was lost while a transaction committed (${describe(cause)}): it may or may not have been applied.`, { cause });
    this.name = "CommitUnknownError";
  }
}

export function isPostgresBusy(error: unknown): boolean {
  if (error instanceof DatabaseUnreachableError) return true;
  return error instanceof Error && "code" in error && typeof error.code === "string" && POSTGRES_BUSY.has(error.code) && "severity" in error;
}

/**
 * The server's codes for a session that ended: connection exceptions (class 08), the server
 * shutting down or restarting (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now),
 * and the sessions PostgreSQL ends itself: idle in a transaction or idle too long (25P03, 57P05).
 */
const SESSION_ENDED = /^(08...|57P0[1235]|25P03)$/;
/** The socket's own failures. */
const SOCKET_ERRORS = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTCONN", "EAI_AGAIN"]);
/**
 * node-postgres says a connection ended or never opened without a code, in these words only
 * (pg/lib/client.js, pg-pool): the one place an error is told by its message.
 */
const CLIENT_LOST = /^(Connection terminated|Client has encountered a connection error and is not queryable|timeout expired)/;

/** Whether `error` is a PostgreSQL connection that ended (or could not open): see `SESSION_ENDED`. */
export function isConnectionLost(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = "code" in error && typeof error.code === "string" ? error.code : undefined;
  if (code !== undefined && (("severity" in error && SESSION_ENDED.test(code)) || SOCKET_ERRORS.has(code))) return true;
  return code === undefined && CLIENT_LOST.test(error.message);
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = "code" in error && typeof error.code === "string" ? `${error.code}: ` : "";
  return `${code}${error.message}`;
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
  /**
   * The work checks its own effect (a fenced write, a no-op once it has been applied): it is tried
   * again also when its outcome is unknown (`isOutcomeUnknown`: its connection was lost, even while
   * it committed). Only for such work (docs/decisions.md, "Connections").
   */
  checksItsEffect?: boolean;
}

/**
 * Whether `error` leaves the work's outcome unknown: its connection was lost while COMMIT was on
 * its way (`CommitUnknownError`), or while a statement outside a transaction ran.
 */
export function isOutcomeUnknown(error: unknown): boolean {
  return error instanceof CommitUnknownError || isConnectionLost(error);
}

/**
 * Runs `work`, which checks its own effect, again while its outcome is unknown (`isOutcomeUnknown`),
 * for up to `giveUpAfterMs`; any other error (a busy database's too) is thrown at once. For a
 * request's own writes: a database that cannot be reached still answers the request within the
 * adapter's own 30 s (503), as before, and one that went away for a moment does not fail it.
 */
export function retryWhileOutcomeUnknown<T>(work: () => Promise<T>, giveUpAfterMs = 30_000): Promise<T> {
  return retryWhile(isOutcomeUnknown, work, { giveUpAfterMs });
}

/**
 * Runs `work` (a store transaction), retrying with growing, jittered waits while the
 * database is locked (and, for work that `checksItsEffect`, while its outcome is unknown). Any
 * other error is thrown at once.
 */
export function retryWhileBusy<T>(work: () => T | Promise<T>, options: RetryOptions = {}): Promise<T> {
  const retryable = options.checksItsEffect ? (error: unknown) => isBusy(error) || isOutcomeUnknown(error) : isBusy;
  return retryWhile(retryable, work, options);
}

/** Runs `work`, again after growing, jittered waits while it fails with an error `retryable` accepts, until `giveUpAfterMs`. */
async function retryWhile<T>(retryable: (error: unknown) => boolean, work: () => T | Promise<T>, options: Omit<RetryOptions, "checksItsEffect">): Promise<T> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!retryable(error)) throw error;
      if (options.giveUpAfterMs !== undefined && Date.now() - started >= options.giveUpAfterMs) throw error;
      options.onBusy?.(attempt, error);
      const wait = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (attempt - 1));
      await new Promise((resolve) => setTimeout(resolve, wait / 2 + Math.random() * (wait / 2)));
    }
  }
}
