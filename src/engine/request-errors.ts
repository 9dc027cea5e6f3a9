import { AppError } from "../domain/errors.js";
import { DatabaseUnreachableError, isBusy } from "../store/index.js";

/**
 * The request error an exception stands for, if any: an AppError as it is, and a locked
 * database as a 503 — nothing was changed, so the client may simply retry. The lock is another
 * program's: in a service process every write (the runner's, the delivery thread's, the
 * requests') is a short synchronous transaction on the main thread's one connection, so a request
 * never waits on the service's own writers. Anything else is a bug (500).
 */
export function asAppError(error: unknown): AppError | undefined {
  if (error instanceof AppError) return error;
  if (error instanceof DatabaseUnreachableError) {
    return new AppError("service_unavailable", "The database cannot be reached at the moment (restarting, or the network to it is down); nothing was changed. Retry in a moment.", { retry_after: 1 });
  }
  if (isBusy(error)) {
    return new AppError(
      "service_unavailable",
      "Another program holds the database's write lock (another action-service process on the same data directory, a sqlite3 session or a backup); nothing was changed. Retry in a moment.",
      { retry_after: 1 },
    );
  }
  return undefined;
}
