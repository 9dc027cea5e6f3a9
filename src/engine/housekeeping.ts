import { ActionFailure } from "../domain/errors.js";
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
