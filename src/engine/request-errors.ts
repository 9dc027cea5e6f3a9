import { AppError } from "../domain/errors.js";
import { isBusy } from "../store/busy.js";

/**
 * The request error an exception stands for, if any: an AppError as it is, and a locked
 * database (another process holding a write lock past the busy timeout) as a 503 —
 * nothing was changed, so the client may simply retry. Anything else is a bug (500).
 */
export function asAppError(error: unknown): AppError | undefined {
  if (error instanceof AppError) return error;
  if (isBusy(error)) {
    return new AppError("service_unavailable", "The database is busy (another process holds a lock); nothing was changed. Retry in a moment.", { retry_after: 1 });
  }
  return undefined;
}
