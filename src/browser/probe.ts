import type { APIRequestContext } from "playwright";
import type { Driver } from "../platforms/driver.js";
import { isSameUser } from "./identity.js";

/** A saved session as Playwright writes it: cookies, and each origin's local storage. */
type SavedState = Awaited<ReturnType<APIRequestContext["storageState"]>>;

/** What a session probe needs besides the HTTP client it is sent with. */
export interface ProbeTarget {
  driver: Driver;
  baseUrl: string;
  username: string;
  timeoutMs: number;
  signal: AbortSignal;
}

/**
 * Whether the driver's session probe (DESIGN §16), sent with `api`'s cookies (storing any it is
 * given back), shows the account's own user signed in. Any other answer, or none, is "not known":
 * the check then opens the start page. An abort is thrown as its reason.
 */
export async function probeShowsAccount(api: APIRequestContext, target: ProbeTarget): Promise<boolean> {
  const { probe } = target.driver;
  if (!probe) return false;
  try {
    const response = await api.get(target.baseUrl + probe.path, {
      maxRedirects: 0,
      failOnStatusCode: false,
      timeout: target.timeoutMs,
      ...(probe.headers ? { headers: probe.headers(target.baseUrl) } : {}),
    });
    try {
      return isSameUser(await probe.signedInAs(response), target.username);
    } finally {
      await response.dispose();
    }
  } catch {
    if (target.signal.aborted) throw target.signal.reason;
    return false;
  }
}

/**
 * The probe sent from this process with the saved session (Playwright's HTTP client, no browser
 * context: a fifth of a context's cost here). `session` is the state to save when the platform
 * changed its cookies (undefined when it did not); undefined altogether when the probe did not show
 * the account's user.
 */
export async function probeFromHere(saved: string, target: ProbeTarget): Promise<{ session: string | undefined } | undefined> {
  const before = JSON.parse(saved) as SavedState;
  // Imported here, as the pool does (fleet.ts): Playwright is loaded after the service is up, not before it listens.
  const { request } = await import("playwright");
  const api = await request.newContext({ storageState: before });
  try {
    if (!(await probeShowsAccount(api, target))) return undefined;
    const { cookies } = await api.storageState();
    return { session: sameCookies(cookies, before.cookies) ? undefined : JSON.stringify({ cookies, origins: before.origins }) };
  } finally {
    await api.dispose();
  }
}

/** Whether two states hold the same cookies (what a platform's answer can change), whatever their order or notation. */
function sameCookies(a: SavedState["cookies"], b: SavedState["cookies"]): boolean {
  const key = (cookies: SavedState["cookies"]): string =>
    JSON.stringify(cookies.map(({ name, value, domain, path, expires }) => [name, value, domain.replace(/^\./, ""), path, Math.round(expires)].join("\n")).sort());
  return key(a) === key(b);
}
