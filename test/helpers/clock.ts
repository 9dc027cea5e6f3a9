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
