import { performance } from "node:perf_hooks";

/** Where time comes from; tests inject their own to move time to a deadline. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * How far this machine's monotonic clock and the database's may run apart, per ms: 200 ppm, ten
 * times a quartz's error (and NTP's largest slew, 500 ppm, is spread over many seconds).
 */
const DRIFT_PER_MS = 2e-4;

/**
 * The database's clock, read in this process (DESIGN §11: on PostgreSQL every expiry and deadline
 * is judged by the database's clock, so a coordinator whose clock is minutes off judges them as
 * the others do). Kept as an offset from the monotonic clock (`performance.now()`, which neither a
 * wrong wall clock nor a step of it moves), set from readings of the database's time: a reading is
 * as certain as half the round trip that brought it, and replaces the one kept when it is more
 * certain than the kept one has become with drift. Before the first reading it is this machine's clock.
 */
export class DatabaseClock implements Clock {
  /** The database's time in ms is `performance.now() + #offset`. */
  #offset = performance.timeOrigin;
  #uncertainty = Number.POSITIVE_INFINITY;
  #readAt = 0;

  now(): Date {
    return new Date(performance.now() + this.#offset);
  }

  /** A reading of the database's time (ISO text) asked at `sentAt` and answered at `receivedAt` (both `performance.now()`). */
  calibrate(databaseTime: string, sentAt: number, receivedAt: number): void {
    const at = Date.parse(databaseTime);
    if (Number.isNaN(at) || receivedAt < sentAt) return;
    const uncertainty = (receivedAt - sentAt) / 2;
    if (uncertainty > this.uncertaintyMs(receivedAt)) return;
    this.#offset = at - (sentAt + receivedAt) / 2;
    this.#uncertainty = uncertainty;
    this.#readAt = receivedAt;
  }

  /** How far `now()` may be from the database's clock, in ms (infinite before the first reading). */
  uncertaintyMs(at = performance.now()): number {
    return this.#uncertainty + (at - this.#readAt) * DRIFT_PER_MS;
  }
}
