import type { Context, Hono } from "hono";
import { getConnInfo } from "@hono/node-server/conninfo";
import { html } from "hono/html";
import { AppError } from "../../domain/errors.js";
import { tooManyRequests } from "../../engine/access/index.js";
import { errorBox, readForm } from "../forms.js";
import { page } from "../layout.js";
import { clearSessionCookie, setSessionCookie, sessionToken, type WebEnv, type WebOptions } from "../session.js";

/** Where to go after signing in: only a path inside the web app (never another site). */
function safeNext(value: string | undefined): string {
  const fallback = "/app/actions";
  if (!value?.startsWith("/") || value.startsWith("//") || value.includes("\\")) return fallback;
  const url = new URL(value, "http://app.invalid");
  const inside = url.origin === "http://app.invalid" && (url.pathname === "/app" || url.pathname.startsWith("/app/"));
  return inside ? url.pathname + url.search : fallback;
}

function signInPage(options: { next: string; error?: string | undefined; notice?: string | undefined }) {
  return page({
    title: "Sign in",
    notice: options.notice,
    body: html`<section class="card sign-in" aria-labelledby="sign-in-title">
<h1 id="sign-in-title">Sign in</h1>
<p>Paste an API key of your workspace. It is exchanged for a session that ends when you sign out, after an hour unused, or after 12 hours; the key itself is not kept in this browser.</p>
${errorBox(options.error)}
<form method="post" action="/app/sign-in">
<input type="hidden" name="next" value="${options.next}">
<label for="key">API key</label>
<input type="password" id="key" name="key" required autocomplete="off" spellcheck="false" aria-describedby="key-hint">
<p class="note" id="key-hint">Keys start with <code>as_</code>. The first admin key is printed when the service first starts; <code>action-service keys create</code> makes more.</p>
<button type="submit">Sign in</button>
</form>
</section>`,
  });
}

function remoteAddress(c: Context): string {
  try {
    return getConnInfo(c).remote.address ?? "unknown";
  } catch {
    return "unknown"; // not served by Node's HTTP server (in-process requests)
  }
}

/** Sign in (an API key for a session cookie) and sign out. */
export function signInRoutes(web: Hono<WebEnv>, options: WebOptions): void {
  const { engine, limiter } = options;
  const secure = (): boolean => engine.core.publicUrl.startsWith("https:");

  web.get("/sign-in", async (c) => {
    const token = sessionToken(c);
    const next = safeNext(c.req.query("next"));
    if (token && await engine.webSessions.get(token)) return c.redirect(next, 303);
    const notice = c.req.query("ended") ? "Your session has ended: sign in again." : c.req.query("signed_out") ? "You are signed out." : undefined;
    return c.html(signInPage({ next, notice }));
  });

  web.post("/sign-in", async (c) => {
    // Keys are not guessable, but a flood of attempts is still refused, per address.
    const address = remoteAddress(c);
    const wait = await limiter.take(`web-sign-in:${address}`);
    if (wait > 0) {
      c.header("Retry-After", String(wait));
      throw tooManyRequests(wait);
    }
    const form = await readForm(c);
    const next = safeNext(form.get("next"));
    const opened = await engine.webSessions.open(form.get("key"));
    if (!opened) return c.html(signInPage({ next, error: "That API key is not valid (or has been revoked)." }), 401);
    setSessionCookie(c, opened.token, secure());
    return c.redirect(next, 303);
  });

  web.post("/sign-out", async (c) => {
    const token = sessionToken(c);
    const form = await readForm(c);
    // Signing out is harmless, but only this app's own form may do it for you.
    if (token && await engine.webSessions.get(token)) {
      if (!engine.webSessions.csrfTokenMatches(token, form.get("_csrf"))) throw new AppError("forbidden", "This form has expired or did not come from this app: reload the page and try again.");
      await engine.webSessions.close(token);
    }
    clearSessionCookie(c, secure());
    return c.redirect("/app/sign-in?signed_out=1", 303);
  });
}
