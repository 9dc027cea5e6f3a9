import type { Principal } from "../domain/keys.js";
import type { PublicEvent } from "../domain/public.js";
import { OUTBOX_START, cursorOf, type ActionRecord, type EventCursor, type EventRecord } from "../store/index.js";
import { requirePermission } from "../engine/access/index.js";
import type { EngineCore } from "../engine/core.js";
import { presentEvent } from "./present-event.js";

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
  const start = (options.after !== undefined ? await store.events.cursorAfter(principal.workspaceId, options.after) : undefined) ?? (await store.events.newest(principal.workspaceId))?.cursor ?? OUTBOX_START;
  return followOutbox(core, principal, start, options.signal);
}

async function* followOutbox(core: EngineCore, principal: Principal, start: EventCursor, signal: AbortSignal): AsyncGenerator<PublicEvent> {
  const { store } = core;
  let cursor = start;
  while (!signal.aborted) {
    // Listened for before the read (which awaits): a change committed while it runs is not missed.
    const change = nextChange(core, principal.workspaceId, signal);
    let events: EventRecord[];
    try {
      events = await store.events.after(principal.workspaceId, cursor, 100, principal.accountIds);
      if (events.length === 0) await change.happened;
    } finally {
      change.stop();
    }
    for (const event of events) {
      cursor = cursorOf(event);
      yield await presentEvent(core, event);
    }
  }
}

/**
 * Resolves `happened` at the next committed change of the workspace's actions in this process, at
 * the change feed's word that another process wrote one of its events (or may have: a call without
 * a notification), or after a short while (a poll); `stop` stops listening. The stream reads the
 * outbox itself: another process's events wake it straight from the feed, with no read of them by
 * `ChangesElsewhere`; its own process's commits wake it once, through the lifecycle.
 */
function nextChange(core: EngineCore, workspaceId: string, signal: AbortSignal): { happened: Promise<void>; stop: () => void } {
  const { store } = core;
  const subject = `event:${workspaceId}`;
  let stop!: () => void;
  const happened = new Promise<void>((resolve) => {
    const onAction = (action: ActionRecord): void => {
      if (action.workspace_id === workspaceId) stop();
    };
    let stopFeed = (): void => undefined;
    stop = (): void => {
      clearTimeout(timer);
      core.lifecycle.events.off("change", onAction);
      stopFeed();
      signal.removeEventListener("abort", stop);
      resolve();
    };
    const timer = setTimeout(stop, POLL_MS);
    core.lifecycle.events.on("change", onAction);
    stopFeed = store.changes.on((change) => {
      if (change === undefined || (change.subject === subject && change.origin !== store.origin)) stop();
    });
    signal.addEventListener("abort", stop, { once: true });
  });
  return { happened, stop };
}

/** The workspace's events as they commit (SSE, DESIGN §13). */
export class EventFeed {
  constructor(private readonly core: EngineCore) {}

  /** The workspace's events as they commit, after `after` when given. */
  stream(principal: Principal, options: { after?: string | undefined; signal: AbortSignal }): Promise<AsyncGenerator<PublicEvent>> {
    return streamEvents(this.core, principal, options);
  }

  /** The id of the workspace's newest event: a page rendered now follows the stream from there. */
  latestId(principal: Principal): Promise<string | undefined> {
    return this.core.store.events.newest(principal.workspaceId).then((newest) => newest?.id);
  }
}
