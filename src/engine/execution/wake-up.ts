import type { Clock } from "../clock.js";
import type { Lifecycle } from "./lifecycle.js";

/** setTimeout's longest delay (about 24.8 days); a later wake-up arms again when this one fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * One timer for the earliest of the moments it is told of, by `clock`, only ever moved sooner: it
 * calls `wake` once that moment has come. Told a moment that has passed, it wakes at once. What was
 * polled for (a paced action's `not_before`, a challenge's deadline, a delivery's next attempt) is
 * waited for instead, at no cost while nothing is due.
 */
export class WakeAt {
  #wake: { timer: NodeJS.Timeout; at: number } | undefined;
  #stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly wake: () => void,
  ) {}

  /** Wakes at `at` (an ISO time), unless already set to wake as soon; nothing when undefined. */
  at(at: string | undefined): void {
    if (at === undefined || this.#stopped) return;
    const ms = Date.parse(at);
    if (Number.isNaN(ms) || (this.#wake && this.#wake.at <= ms)) return;
    this.#arm(ms);
  }

  /**
   * A timer for `at` by the clock. One that fires before `at` (Node measures a delay from the
   * start of the event loop's turn, so under load a timer fires early by the wall clock; a
   * longest delay runs out; the clock was set back) arms again for the rest: woken early, the
   * work would find nothing due, and nothing would wake it again before the heartbeat.
   */
  #arm(at: number): void {
    clearTimeout(this.#wake?.timer);
    const timer = setTimeout(
      () => {
        if (this.#stopped) return;
        if (this.clock.now().getTime() < at) return this.#arm(at);
        this.#wake = undefined;
        this.wake();
      },
      Math.min(MAX_TIMER_MS, Math.max(0, at - this.clock.now().getTime())),
    );
    timer.unref();
    this.#wake = { timer, at };
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#wake?.timer);
    this.#wake = undefined;
  }
}

/**
 * Wakes the queue when its earliest paced action may start (DESIGN §16: an action its account's
 * pace holds back stays queued with `not_before`): one timer, for the earliest `not_before`, only
 * ever moved sooner. The runner's heartbeat, which learns the queue's earliest `not_before` with
 * its lease's renewal, is the backstop.
 */
export class PacedWakeUp {
  readonly #timer: WakeAt;

  constructor(
    private readonly lifecycle: Lifecycle,
    wake: () => void,
  ) {
    this.#timer = new WakeAt(lifecycle.clock, wake);
  }

  /** Sets the timer for the queue's earliest `not_before`, read now, unless it is already set to wake as soon. */
  async set(): Promise<void> {
    this.learn(await this.lifecycle.store.actions.nextNotBefore(this.lifecycle.now()));
  }

  /** Sets the timer for `next`, an earliest `not_before` read elsewhere (the heartbeat's survey). */
  learn(next: string | undefined): void {
    this.#timer.at(next);
  }

  stop(): void {
    this.#timer.stop();
  }
}
