import type { Lifecycle } from "./lifecycle.js";

/** setTimeout's longest delay (about 24.8 days); a later wake-up arms again when this one fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Wakes the queue when its earliest paced action may start (DESIGN §16: an action its account's
 * pace holds back stays queued with `not_before`): one timer, for the earliest `not_before`, only
 * ever moved sooner. The runner's heartbeat is the backstop.
 */
export class PacedWakeUp {
  #wake: { timer: NodeJS.Timeout; at: number } | undefined;
  #stopped = false;

  constructor(
    private readonly lifecycle: Lifecycle,
    private readonly wake: () => void,
  ) {}

  /** Sets the timer for the queue's earliest `not_before`, unless it is already set to wake as soon. */
  async set(): Promise<void> {
    const next = await this.lifecycle.store.actions.nextNotBefore(this.lifecycle.now());
    if (next === undefined || this.#stopped) return;
    const at = Date.parse(next);
    if (this.#wake && this.#wake.at <= at) return;
    this.#arm(at);
  }

  /**
   * A timer for `at` by the engine's clock. One that fires before `at` (Node measures a delay from
   * the start of the event loop's turn, so under load a timer fires early by the wall clock; a
   * longest delay runs out; the clock was set back) arms again for the rest: woken early, the
   * queue would find nothing due and nothing would wake it again before the heartbeat.
   */
  #arm(at: number): void {
    clearTimeout(this.#wake?.timer);
    const timer = setTimeout(
      () => {
        if (this.#stopped) return;
        if (this.lifecycle.clock.now().getTime() < at) return this.#arm(at);
        this.#wake = undefined;
        this.wake();
      },
      Math.min(MAX_TIMER_MS, Math.max(0, at - this.lifecycle.clock.now().getTime())),
    );
    timer.unref();
    this.#wake = { timer, at };
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#wake?.timer);
  }
}
