import type { Context, MiddlewareHandler } from "hono";
import { getCookie, setCookie, deleteCookie } from "hono/cookie";
import { AppError } from "../domain/errors.js";
import { checkHostAndOrigin, type OriginPolicy } from "../api/origin.js";
import type { Engine } from "../engine/engine.js";
import { callerOf, tooManyRequests, type RateLimiter, type WebSession } from "../engine/access/index.js";
import { ROLE_PERMISSIONS, type Permission, type Principal } from "../domain/keys.js";
import type { Viewer } from "./layout.js";

/** The session cookie: a random token (never the API key), HttpOnly, SameSite=Strict, only sent to /app. */
export const SESSION_COOKIE = "action_service_session";

/** What a signed-in request carries through the web app's handlers. */
export interface WebEnv {
  Variables: { session: WebSession; viewer: Viewer; sessionToken: string };
}

export interface WebOptions {
  engine: Engine;
  limiter: RateLimiter;
  policy: OriginPolicy;
}

/** Security headers on every web app response: nothing cached, framed, sniffed or run from elsewhere. */
export const secureHeaders: MiddlewareHandler = async (c, next) => {
  await next();
  if (!c.res.headers.has("Cache-Control")) c.header("Cache-Control", "no-store");
  // Not no-referrer: with it the browser sends `Origin: null` on this app's own forms.
  c.header("Referrer-Policy", "same-origin");
  c.header("X-Content-Type-Options", "nosniff");
  c.header("X-Frame-Options", "DENY");
  c.header(
    "Content-Security-Policy",
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  );
};

/**
 * Host must be this server's, and a request that changes something must not come from another
 * site: its Origin, when the browser sends one, is this service's (SameSite=Strict and the form
 * token are the other two locks).
 */
export function sameOrigin(policy: OriginPolicy): MiddlewareHandler {
  return async (c, next) => {
    const headers = c.req.raw.headers;
    const refusal = checkHostAndOrigin(c.req.method === "GET" || c.req.method === "HEAD" ? { get: (name) => (name === "origin" ? null : headers.get(name)) } : headers, policy, "the web app");
    if (refusal) throw new AppError("forbidden", refusal);
    await next();
  };
}

export function setSessionCookie(c: Context, token: string, secure: boolean): void {
  setCookie(c, SESSION_COOKIE, token, { path: "/app", httpOnly: true, sameSite: "Strict", secure });
}

export function clearSessionCookie(c: Context, secure: boolean): void {
  deleteCookie(c, SESSION_COOKIE, { path: "/app", httpOnly: true, sameSite: "Strict", secure });
}

export function sessionToken(c: Context): string | undefined {
  return getCookie(c, SESSION_COOKIE);
}

/**
 * Requires a live session: a page without one goes to sign-in, a script's request gets 401.
 * Then the key's share of the rate limit, and for anything that changes state the form token.
 */
export function requireSession(options: WebOptions): MiddlewareHandler<WebEnv> {
  const { engine, limiter } = options;
  return async (c, next) => {
    const token = sessionToken(c);
    const session = token ? await engine.webSessions.get(token) : undefined;
    if (!token || !session) {
      if (wantsJson(c)) throw new AppError("unauthorized", "Your session has ended: sign in again.");
      const back = c.req.method === "GET" ? `?next=${encodeURIComponent(c.req.path + (new URL(c.req.url).search || ""))}` : "";
      return c.redirect(`/app/sign-in${back}${token ? `${back ? "&" : "?"}ended=1` : ""}`, 303);
    }
    const wait = await limiter.take(callerOf(session.principal));
    if (wait > 0) {
      c.header("Retry-After", String(wait));
      throw tooManyRequests(wait);
    }
    if (c.req.method !== "GET" && c.req.method !== "HEAD") {
      const given = c.req.header("x-csrf-token") ?? (await formField(c, "_csrf"));
      if (!given || !engine.webSessions.csrfTokenMatches(token, given)) throw new AppError("forbidden", "This form has expired or did not come from this app: reload the page and try again.");
    }
    c.set("session", session);
    c.set("sessionToken", token);
    c.set("viewer", {
      role: session.principal.role,
      workspaceName: session.workspaceName,
      keyPrefix: session.keyPrefix,
      csrfToken: session.csrfToken,
      managesKeys: session.principal.role === "admin" && session.principal.accountIds === undefined,
    });
    await next();
  };
}

/** Script requests ask for JSON; pages are HTML. */
export function wantsJson(c: Context): boolean {
  return (c.req.header("accept") ?? "").includes("application/json") || (c.req.header("content-type") ?? "").includes("application/json");
}

/** A field of a urlencoded or multipart form body (Hono caches the parsed body for the handler). */
export async function formField(c: Context, name: string): Promise<string | undefined> {
  const type = c.req.header("content-type") ?? "";
  if (!type.includes("application/x-www-form-urlencoded") && !type.includes("multipart/form-data")) return undefined;
  const body = await c.req.parseBody();
  const value = body[name];
  return typeof value === "string" ? value : undefined;
}

/** Whether the page offers what needs `permission` (the engine refuses it anyway). */
export function may(principal: Principal, permission: Permission): boolean {
  return ROLE_PERMISSIONS[principal.role].has(permission);
}
