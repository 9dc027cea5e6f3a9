import { createHash } from "node:crypto";
import type { Context } from "hono";

/**
 * Live status for a page (until events stream): the page's version is a hash of what it shows
 * that can change; `?poll=1` answers only that version, and the page's script reloads when it moves.
 */
export function liveVersion(parts: unknown[]): string {
  return createHash("sha256").update(JSON.stringify(parts)).digest("base64url").slice(0, 16);
}

/** The poll address of the current page. */
export function pollUrl(c: Context): string {
  const url = new URL(c.req.url);
  url.searchParams.set("poll", "1");
  return url.pathname + url.search;
}

export function isPoll(c: Context): boolean {
  return c.req.query("poll") !== undefined;
}
