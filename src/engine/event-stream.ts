import type { Principal } from "../domain/keys.js";
import type { PublicEvent } from "../domain/public.js";
import { requirePermission } from "./access.js";
import type { EngineCore } from "./core.js";
import { presentEvent } from "./webhooks.js";

/** How often a stream looks at the outbox for events other processes wrote. */
const POLL_MS = 500;

/**
 * The workspace's events, live (`GET /v1/events`, DESIGN §13): those after `after` (an event id,
 * as SSE's Last-Event-ID gives it) first, then each new one as it commits, in outbox order; only
 * the accounts the key may see. Without `after` (or an id no longer kept), from now on.
 */
export async function streamEvents(core: EngineCore, principal: Principal, options: { after?: string | undefined; signal: AbortSignal }): Promise<AsyncGenerator<PublicEvent>> {
  // Checked before the stream starts, so a refusal is a request error rather than an empty stream.
  requirePermission(principal, "read");
  const { store } = core;
  const start = (options.after !== undefined ? await store.events.seqOf(principal.workspaceId, options.after) : undefined) ?? (await store.events.latestSeq(principal.workspaceId));
  return followOutbox(core, principal, start, options.signal);
}

async function* followOutbox(core: EngineCore, principal: Principal, start: number, signal: AbortSignal): AsyncGenerator<PublicEvent> {
  const { store } = core;
  let seq = start;
  while (!signal.aborted) {
    const events = await store.events.after(principal.workspaceId, seq, 100, principal.accountIds);
    for (const event of events) {
      seq = event.seq;
      yield await presentEvent(core, event);
    }
    if (events.length === 0) await nextChange(core, signal);
  }
}

/** Resolves at the next committed action change in this process, or after a short while (other processes). */
function nextChange(core: EngineCore, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      core.lifecycle.events.off("change", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, POLL_MS);
    core.lifecycle.events.on("change", done);
    signal.addEventListener("abort", done, { once: true });
  });
}
