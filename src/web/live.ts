import type { Context, Hono } from "hono";
import { streamSSE } from "hono/streaming";
import type { Engine } from "../engine/engine.js";
import type { WebEnv } from "./session.js";

/** What a page follows: events of one type, about one id or any (`*`). */
export type Watch = `${"action.updated" | "account.updated"}:${string}`;

/** A web stream is closed after this long; the browser reconnects at once, and its session is checked again then. */
const STREAM_MS = 5 * 60 * 1000;

/**
 * Live status for pages (DESIGN §12, §13): `/app/events` streams the session's events (SSE, from
 * `?after=` or Last-Event-ID), and a page that shows something still moving reloads when an event
 * it watches arrives.
 */
export function eventRoutes(web: Hono<WebEnv>, engine: Engine): void {
  web.get("/events", (c) => {
    const { principal } = c.get("session");
    const after = c.req.header("last-event-id") ?? c.req.query("after");
    const controller = new AbortController();
    const abort = (): void => controller.abort();
    c.req.raw.signal.addEventListener("abort", abort, { once: true });
    const timer = setTimeout(abort, STREAM_MS);
    return streamSSE(c, async (sse) => {
      try {
        await sse.write(": connected\n\n");
        for await (const event of await engine.events.stream(principal, { after: after || undefined, signal: controller.signal })) {
          await sse.writeSSE({ id: event.id, event: event.type, data: JSON.stringify(event) });
        }
      } finally {
        clearTimeout(timer);
        c.req.raw.signal.removeEventListener("abort", abort);
      }
    });
  });
}

/** The page's live attributes: what it watches, and the event it was rendered after. */
export async function liveFor(c: Context<WebEnv>, engine: Engine, watch: Watch[]): Promise<{ watch: string; after: string } | undefined> {
  if (watch.length === 0) return undefined;
  return { watch: watch.join(","), after: (await engine.events.latestId(c.get("session").principal)) ?? "" };
}
