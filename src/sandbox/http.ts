import { timingSafeEqual } from "node:crypto";
import type { Context, MiddlewareHandler } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import type { Courier } from "./courier.js";
import { alert, html, layout, type SafeHtml } from "./html.js";
import { SESSION_COOKIE, SESSION_LIFETIME_SECONDS, type Session, type SessionStore } from "./sessions.js";
import { skinFor, type Skin } from "./skin.js";
import type { SandboxState, User } from "./state.js";

/** What the route modules are built from. */
export interface SandboxDeps {
  state: SandboxState;
  sessions: SessionStore;
  clock: () => Date;
  /** Mails and texts codes and links to users that have somewhere to receive them. */
  courier: Courier;
  /** The sandbox's own origin, for links it sends (undefined: the origin the request came to). */
  origin: string | undefined;
}

export type SandboxEnv = {
  Variables: {
    skin: Skin;
    session: Session;
    viewer: User | undefined;
    /** The browser sent a session cookie whose session is gone (signed out elsewhere, expired). */
    sessionEnded: boolean;
    /** The string fields of a POSTed form (CSRF already checked). */
    form: Record<string, string>;
  };
};
export type Ctx = Context<SandboxEnv>;
export type ErrorStatus = 400 | 403 | 404 | 413 | 429 | 500;

/** The error pages a person sees; the same words in both skins (docs/sandbox.md lists them). */
export const ERROR_PAGES: Record<ErrorStatus, { title: string; heading: string; text: string }> = {
  400: { title: "Bad request", heading: "Something's wrong with that request", text: "We couldn't read what you sent. Go back and try again." },
  403: { title: "Request blocked", heading: "We couldn't accept that form", text: "The form was out of date or didn't come from this site. Go back, reload the page and try again." },
  404: { title: "Page not found", heading: "This page isn't available", text: "The link you followed may be broken, or the page may have been removed." },
  413: { title: "Too large", heading: "That's too much", text: "What you sent is too large. Shorten it and try again." },
  429: { title: "Slow down", heading: "Slow down", text: "You're doing that too much. Try again later." },
  500: { title: "Something went wrong", heading: "Something went wrong", text: "We're having trouble right now. Try again in a moment." },
};

export function setSessionCookie(c: Context, session: Session): void {
  setCookie(c, SESSION_COOKIE, session.id, {
    path: "/", httpOnly: true, sameSite: "Lax", maxAge: SESSION_LIFETIME_SECONDS,
  });
}

/** Loads (or starts) the browser's session, the signed-in viewer and the active skin. */
export function sessionMiddleware(deps: SandboxDeps): MiddlewareHandler<SandboxEnv> {
  return async (c, next) => {
    c.set("skin", skinFor(deps.state.settings.redesign));
    const cookie = getCookie(c, SESSION_COOKIE);
    let session = deps.sessions.get(cookie);
    c.set("sessionEnded", cookie !== undefined && session === undefined);
    if (!session) {
      session = deps.sessions.createAnonymous();
      setSessionCookie(c, session);
    }
    c.set("session", session);
    c.set("viewer", session.handle !== undefined ? deps.state.users.get(session.handle) : undefined);
    await next();
    c.res.headers.set("Cache-Control", "no-store");
    c.res.headers.set("X-Content-Type-Options", "nosniff");
    c.res.headers.set("Referrer-Policy", "same-origin");
    c.res.headers.set("X-Frame-Options", "DENY");
  };
}

/** Compares two secrets in constant time. */
export function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Parses POSTed forms and refuses any without this session's CSRF token (403 page). */
export function formMiddleware(): MiddlewareHandler<SandboxEnv> {
  return async (c, next) => {
    if (c.req.method !== "POST") return next();
    let body: Record<string, unknown>;
    try {
      body = await c.req.parseBody();
    } catch {
      return errorPage(c, 400);
    }
    const form: Record<string, string> = {};
    for (const [key, value] of Object.entries(body)) if (typeof value === "string") form[key] = value;
    const token = form["_csrf"];
    if (token === undefined || !sameToken(token, c.var.session.csrf)) {
      // A form from a page loaded before the session ended: send the person to sign in again.
      if (c.var.sessionEnded && token !== undefined) return toSignIn(c);
      return errorPage(c, 403);
    }
    c.set("form", form);
    return next();
  };
}

/** The named fields of the posted form, or undefined when one is absent (a malformed post). */
export function fields<K extends string>(c: Ctx, ...names: K[]): Record<K, string> | undefined {
  const out = {} as Record<K, string>;
  for (const name of names) {
    const value = c.var.form[name];
    if (value === undefined) return undefined;
    out[name] = value;
  }
  return out;
}

/** Renders a page in the active skin, showing (and clearing) the session's one-time notice. */
export function renderPage(c: Ctx, title: string, body: SafeHtml, status: 200 | ErrorStatus | 410 | 422 = 200): Response {
  const session = c.var.session;
  const flash = session.flash;
  delete session.flash;
  const page = layout({ skin: c.var.skin, title, viewer: c.var.viewer, csrf: session.csrf, flash, body });
  return c.html(page.value, status);
}

/** A standard error page; works even when the session middleware never ran. */
export function errorPage(c: Context, status: ErrorStatus, deps?: SandboxDeps): Response {
  const text = ERROR_PAGES[status];
  const skin: Skin | undefined = c.get("skin") ?? (deps ? skinFor(deps.state.settings.redesign) : undefined);
  const session: Session | undefined = c.get("session");
  const viewer: User | undefined = c.get("viewer");
  const activeSkin = skin ?? skinFor(false);
  const body = html`<section class="card panel narrow">
      <h1>${text.heading}</h1>
      <p>${text.text}</p>
      <p><a href="${activeSkin.paths.home}">Go to ${activeSkin.text.brand}</a></p>
    </section>`;
  const page = layout({ skin: activeSkin, title: text.title, viewer, csrf: session?.csrf ?? "", body });
  return c.html(page.value, status);
}

/** Shows a refusal next to the form that caused it. */
export function formError(message: string | undefined): SafeHtml {
  return alert(message);
}

export const SESSION_ENDED_TEXT = "Your session has ended. Sign in again.";

/** Redirects to sign-in (remembering where the person was going) unless someone is signed in. */
export function requireViewer(c: Ctx): User | Response {
  return c.var.viewer ?? toSignIn(c);
}

function toSignIn(c: Ctx): Response {
  if (c.var.sessionEnded) c.var.session.flash = { tone: "error", text: SESSION_ENDED_TEXT };
  if (c.req.method !== "GET") return c.redirect(c.var.skin.paths.signIn, 303);
  const url = new URL(c.req.url);
  const next = encodeURIComponent(url.pathname + url.search);
  return c.redirect(`${c.var.skin.paths.signIn}?next=${next}`, 302);
}

/** Counts a rate-limited action; returns the 429 page when the viewer is doing too much. */
export function rateLimited(c: Ctx, deps: SandboxDeps, viewer: User): Response | undefined {
  const outcome = deps.state.takeAction(viewer.handle);
  if (outcome.ok) return undefined;
  c.header("Retry-After", String(outcome.retryAfterSeconds));
  return errorPage(c, 429);
}

/** Only a same-site path is a valid place to return to after sign-in. */
export function safeNext(next: string | undefined): string | undefined {
  if (!next || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/\\")) return undefined;
  if (next.startsWith("/_sandbox")) return undefined;
  return next;
}

/** Route guard: a route of the other skin sends the person to the active skin's home. */
export function onlyIn(skin: Skin): MiddlewareHandler<SandboxEnv> {
  return async (c, next) => {
    if (c.var.skin.name === skin.name) return next();
    return c.redirect(c.var.skin.paths.home, c.req.method === "GET" ? 302 : 303);
  };
}
