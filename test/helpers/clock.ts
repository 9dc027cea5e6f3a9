import type { Clock } from "../../src/engine/clock.js";

/** A clock the test moves by hand. */
export class FakeClock implements Clock {
  #now: number;

  constructor(start = "2026-11-21T12:00:00.000Z") {
    this.#now = Date.parse(start);
  }

  now(): Date {
    return new Date(this.#now);
  }

  advance(ms: number): void {
    this.#now += ms;
  }
}

/**
 * Real time plus an offset the test moves forward: time runs on as usual, and a jump reaches a
 * deadline (a link's expiry, a check's interval) at once instead of after a real wait.
 */
export class OffsetClock implements Clock {
  offsetMs = 0;

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  /** Moves the clock `ms` forward. */
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}
