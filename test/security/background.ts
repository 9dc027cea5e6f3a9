import type { Harness } from "../helpers/harness.js";
import { sql, value } from "../helpers/sql.js";

// The security world's work in the background (runs, webhook deliveries), and waiting for it to end.

/**
 * How long a fixture waits for work in the background (an action to pause, deliveries to be
 * attempted): far above what that work takes on a loaded machine (milliseconds), below a case's 60 s.
 */
const SETTLE_MS = 30_000;

/**
 * How often `until` looks again when nothing it hears of has changed: webhook deliveries tell no
 * event, and every set of fixtures waits for its deliveries' attempts (a look is two counts, well
 * under a millisecond).
 */
const POLL_MS = 5;

/** Resolves once no action will still write without a request and no webhook delivery is due. */
export function settled(h: Harness, timeoutMs = SETTLE_MS): Promise<void> {
  return until(h, async () => (await unsettledActions(h)) === 0 && (await unsettledDeliveries(h)) === 0, timeoutMs, "actions or webhook deliveries still running in the background");
}

/** Waits for the fixture action's run to pause at needs_input, told by the engine's change events. */
export async function pausedAtNeedsInput(h: Harness, actionId: string): Promise<void> {
  const action = await h.engine.waitFor(actionId, SETTLE_MS / 1000);
  if (action.status !== "needs_input") throw new Error(`fixture action ${actionId} is ${action.status}, not at needs_input`);
}

/**
 * Waits until `check` passes, looking again at every action change and otherwise every POLL_MS
 * (a tight loop of queries would slow the database the background work needs).
 */
async function until(h: Harness, check: () => Promise<boolean>, timeoutMs: number, message: string): Promise<void> {
  let changed = false;
  let wake: (() => void) | undefined;
  const unsubscribe = h.engine.onChange(() => {
    changed = true;
    wake?.();
  });
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      changed = false;
      if (await check()) return;
      if (Date.now() > deadline) throw new Error(message);
      if (changed) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, POLL_MS);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  } finally {
    unsubscribe();
  }
}

/**
 * Actions that will still write without a request: running ones, and queued ones nothing
 * holds back (an account's actions wait while another of its actions is at needs_input).
 */
async function unsettledActions(h: Harness): Promise<number> {
  return Number(
    await value(
      h.store,
      sql`SELECT count(*) FROM actions a
       WHERE a.status = 'running'
          OR (a.status = 'queued' AND NOT EXISTS (SELECT 1 FROM actions b WHERE b.account_id = a.account_id AND b.status = 'needs_input'))`,
    ),
  );
}

/**
 * Webhook deliveries that will still be attempted (and written) without a request: those being
 * sent now, and those the dispatcher would claim now (pending, due, not leased, their endpoint
 * enabled, no earlier delivery of the same subject to the same endpoint pending), as
 * WebhookRepository.claimDue picks them. A failed delivery's next attempt is not due on the fake clock.
 */
async function unsettledDeliveries(h: Harness): Promise<number> {
  const now = h.clock.now().toISOString();
  return Number(
    await value(
      h.store,
      sql`SELECT count(*) FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
       WHERE d.state = 'pending' AND w.disabled_at IS NULL
         AND ((d.leased_by IS NOT NULL AND d.leased_until > ${now})
           OR (d.next_attempt_at <= ${now} AND (d.leased_until IS NULL OR d.leased_until <= ${now})
               AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p WHERE p.endpoint_id = d.endpoint_id AND p.subject_id = d.subject_id AND p.state = 'pending' AND p.event_seq < d.event_seq)))`,
    ),
  );
}
