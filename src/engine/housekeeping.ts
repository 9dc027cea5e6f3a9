import { ActionFailure } from "../domain/errors.js";
import { isBusy } from "../store/index.js";
import type { ActionRecord } from "../store/records.js";
import { purgeExpiredKeys } from "./idempotency.js";
import type { EngineCore } from "./core.js";
import type { Logger } from "./logger.js";

/** Events are kept this long (SSE resumes within it); pending deliveries keep theirs longer. */
const EVENT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

const CHECK_RETENTION_MS = 24 * 60 * 60 * 1000;

export const PURGE_INTERVAL_MS = 10 * 60 * 1000;

/**
 * Runs `work` every `ms`. A periodic job must never end the process: a locked database
 * or any other error is logged and the next tick tries again.
 */
export function every(ms: number, name: string, logger: Logger, work: () => Promise<unknown>): NodeJS.Timeout {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    work()
      .catch((error: unknown) => logger.warn({ err: error }, `${name} failed; it runs again shortly`))
      .finally(() => (running = false));
  }, ms);
  timer.unref();
  return timer;
}

/** Idempotency records past their 24 h and web sessions past their deadline. */
export async function purgeExpired(core: EngineCore): Promise<void> {
  const { store, lifecycle } = core;
  await purgeExpiredKeys(core);
  await store.webSessions.purgeExpired(lifecycle.now());
  // Rate-limit buckets shared on PostgreSQL: a full one is the same as none.
  if (store.dialect === "postgres") await store.rateLimits.purge();
  await store.events.purgeBefore(new Date(lifecycle.clock.now().getTime() - EVENT_RETENTION_MS).toISOString());
  // Inbox messages are kept 24 hours (DESIGN §15).
  await store.inbox.deleteExpired(lifecycle.now());
  // What a health check found is on its account; the check itself is kept a day (DESIGN §16).
  await store.actions.purgeChecks(new Date(lifecycle.clock.now().getTime() - CHECK_RETENTION_MS).toISOString());
}

/**
 * Fails every `needs_input` action whose deadline has passed (with `challenge_timeout`)
 * and stops its run. Each failure is made only if, in its transaction, the action still waits and
 * its challenge is still open past its deadline: an answer recorded since the overdue ones were
 * read wins (and an answer is recorded only before the deadline). Returns how many expired.
 */
export async function expireOverdueChallenges(core: EngineCore): Promise<number> {
  const { store, lifecycle, runner } = core;
  let expired = 0;
  for (const challenge of await store.challenges.overdue(lifecycle.now())) {
    const failure = new ActionFailure("challenge_timeout", `The ${challenge.kind} challenge was not answered before ${challenge.expires_at}.`);
    const stillOverdue = async (action: ActionRecord): Promise<boolean> => action.status === "needs_input" && (await store.challenges.isOverdue(challenge.id, lifecycle.now()));
    if (await lifecycle.finish(challenge.action_id, { status: "failed", code: failure.code, message: failure.message }, stillOverdue)) {
      runner.abort(challenge.action_id, failure);
      expired += 1;
    }
  }
  return expired;
}

/**
 * Challenge deadlines (DESIGN §3: `needs_input → failed` with `challenge_timeout` when `expires_at`
 * passes). The sweep ticks every `intervalMs` on the engine's clock and looks for overdue
 * challenges only once the earliest deadline it knows of has passed: an idle coordinator sends
 * nothing for it. It learns deadlines from the store at start, after each sweep, when an action
 * pauses here (`refresh`), and from every heartbeat's survey of the store (`learn`), so a
 * challenge another coordinator opened is known within a heartbeat.
 */
export class DeadlineSweep {
  /** The earliest deadline known, in ms on the engine's clock; undefined: none open. */
  #next: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #sweeping = false;

  constructor(
    private readonly core: EngineCore,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.#timer = setInterval(() => void this.#tick(), this.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** A deadline seen elsewhere (the heartbeat's survey): the sweep looks once it has passed. */
  learn(at: string | undefined): void {
    if (at === undefined) return;
    const ms = Date.parse(at);
    if (!Number.isNaN(ms) && (this.#next === undefined || ms < this.#next)) this.#next = ms;
  }

  /** Reads the earliest open deadline now (a challenge was opened here). */
  async refresh(): Promise<void> {
    this.learn(await this.core.store.challenges.nextDeadline());
  }

  async #tick(): Promise<void> {
    if (this.#sweeping || this.#next === undefined || this.core.lifecycle.clock.now().getTime() < this.#next) return;
    const due = this.#next;
    this.#next = undefined;
    this.#sweeping = true;
    try {
      await expireOverdueChallenges(this.core);
      await this.refresh();
    } catch (error) {
      // Looked for again at the next tick.
      this.learn(new Date(due).toISOString());
      if (!isBusy(error)) this.core.logger.warn({ err: error }, "deadline check failed; it runs again shortly");
    } finally {
      this.#sweeping = false;
    }
  }
}
