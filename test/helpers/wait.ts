/**
 * The suite's one way to wait for a condition reached in the background: poll `check` until it
 * gives a value (anything but `undefined`, `false`, `null`, `0` or `""`), and return that value.
 *
 * The bound is a backstop against a hang, never the verdict on speed: it is far above what the
 * work takes on a machine whose every core is busy (`npm run test:loaded`), and below the test's
 * own timeout so the failure says what was awaited. A `check` that throws ends the wait with its
 * error, unless `errorsAreNotYet` (a server still starting refuses its connections).
 */
export interface WaitOptions {
  /** What is awaited, for the failure's message ("the action to succeed"). */
  what?: string;
  /** The backstop: 30 s unless said. */
  timeoutMs?: number;
  /** How often to look: 20 ms unless said; slower for a check that costs (an HTTP call under a rate limit). */
  everyMs?: number;
  /** A `check` that throws is not there yet (polled again; the last error is in the failure), instead of a failure. */
  errorsAreNotYet?: boolean;
  /** Stops waiting at once, with this error, when it returns a message (a process that exited). */
  abandon?: () => string | undefined;
}

export const DEFAULT_WAIT_MS = 30_000;

export async function eventually<T>(check: () => T | undefined | false | null | Promise<T | undefined | false | null>, options: WaitOptions | number = {}): Promise<T> {
  const { what = "the condition", timeoutMs = DEFAULT_WAIT_MS, everyMs = 20, errorsAreNotYet = false, abandon } = typeof options === "number" ? { timeoutMs: options } : options;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    const gaveUp = abandon?.();
    if (gaveUp !== undefined) throw new Error(`gave up waiting for ${what}: ${gaveUp}`);
    try {
      const value = await check();
      if (value) return value;
      lastError = undefined;
    } catch (error) {
      if (!errorsAreNotYet) throw error;
      lastError = error;
    }
    if (Date.now() > deadline) {
      const cause = lastError === undefined ? "" : ` (last: ${lastError instanceof Error ? lastError.message : String(lastError)})`;
      throw new Error(`${what} not reached within ${timeoutMs} ms${cause}`);
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
