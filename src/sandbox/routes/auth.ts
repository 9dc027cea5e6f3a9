import type { Hono } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import {
  CODE_LIFETIME_MS, MAX_CODE_ATTEMPTS, captchaSolved, newCaptcha, newCode, normalizeCode, securityAnswerMatches, verifyTotp,
} from "../challenges.js";
import {
  errorPage, fields, onlyIn, renderPage, safeNext, sameToken, setSessionCookie,
  type Ctx, type SandboxDeps, type SandboxEnv,
} from "../http.js";
import { SIGN_IN_LINK_TEXT, SIGN_IN_TEXT, challengeBody, challengeIntro, signInBody, signInLinkRefusedBody } from "../pages/sign-in.js";
import { DEVICE_COOKIE, DEVICE_LIFETIME_SECONDS, type PendingSignIn } from "../sessions.js";
import { SIGN_IN_LINK_PATH, SKINS } from "../skin.js";
import { randomToken, type User } from "../state.js";

/** Sign-in, its challenge step, and sign-out, for both skins. */
export function registerAuthRoutes(app: Hono<SandboxEnv>, deps: SandboxDeps): void {
  for (const skin of SKINS) {
    const guard = onlyIn(skin);
    const { signIn, signOut, challenge } = skin.paths;

    app.get(signIn, guard, (c) => {
      if (c.var.viewer) return c.redirect(skin.paths.home, 302);
      const next = safeNext(c.req.query("next"));
      return renderPage(c, "Sign in", signInBody({ skin, csrf: c.var.session.csrf, ...(next ? { next } : {}) }));
    });

    app.post(signIn, guard, (c) => postSignIn(c, deps));

    app.post(signOut, guard, (c) => {
      deps.sessions.end(c.var.session);
      const fresh = deps.sessions.createAnonymous();
      fresh.flash = { tone: "notice", text: SIGN_IN_TEXT.signedOut };
      setSessionCookie(c, fresh);
      return c.redirect(skin.paths.signIn, 303);
    });

    app.get(`${challenge}/status`, guard, (c) => {
      const pending = c.var.session.pending;
      const live = pending !== undefined && deps.sessions.isLive(pending);
      return c.json({ approved: live && pending.kind === "device" && pending.deviceApproved, expired: pending !== undefined && !live });
    });

    app.get(challenge, guard, (c) => {
      const found = currentChallenge(c, deps);
      if (found instanceof Response) return found;
      const { user, pending } = found;
      // Without the script (or on a plain reload), an approved device sign-in moves on by itself.
      if (pending.kind === "device" && pending.deviceApproved) return completeSignIn(c, deps, user, pending.next, false);
      return showChallenge(c, user, pending);
    });

    app.post(`${challenge}/resend`, guard, (c) => {
      const found = currentChallenge(c, deps);
      if (found instanceof Response) return found;
      const { user, pending } = found;
      if (pending.kind === "magic_link") {
        sendLink(c, deps, user, pending);
        return showChallenge(c, user, pending, { notice: SIGN_IN_TEXT.linkResent });
      }
      if (pending.kind !== "email" && pending.kind !== "sms") return c.redirect(challenge, 303);
      sendCode(deps, user, pending);
      return showChallenge(c, user, pending, { notice: SIGN_IN_TEXT.codeResent });
    });

    app.post(challenge, guard, (c) => postChallenge(c, deps));
  }
  // The same path in both skins: a mail sent before the redesign still signs in after it.
  app.get(`${SIGN_IN_LINK_PATH}/:token`, (c) => openSignInLink(c, deps));
}

async function postSignIn(c: Ctx, deps: SandboxDeps): Promise<Response> {
  const skin = c.var.skin;
  const names = skin.signInFields;
  const form = fields(c, names.username, names.password);
  if (!form) return errorPage(c, 400);
  const username = (form[names.username] ?? "").trim();
  const password = form[names.password] ?? "";
  const next = safeNext(c.var.form["next"]);
  const again = (error: string) =>
    renderPage(c, "Sign in", signInBody({ skin, csrf: c.var.session.csrf, error, username, ...(next ? { next } : {}) }), 422);
  if (username === "" || password === "") return again(SIGN_IN_TEXT.missingFields);
  const user = deps.state.findUser(username);
  if (!user) return again(SIGN_IN_TEXT.unknownUser);
  if (!deps.state.passwordMatches(user, password)) return again(SIGN_IN_TEXT.wrongPassword);

  const remembered = deps.sessions.isRemembered(getCookie(c, DEVICE_COOKIE), user.handle);
  if (user.challenge === "none" || (remembered && user.challenge !== "checkpoint")) {
    return completeSignIn(c, deps, user, next, false);
  }
  const pending: PendingSignIn = {
    handle: user.handle, kind: user.challenge, startedAt: deps.clock(), attempts: 0, deviceApproved: false,
  };
  if (next) pending.next = next;
  if (pending.kind === "email" || pending.kind === "sms") sendCode(deps, user, pending);
  if (pending.kind === "magic_link") sendLink(c, deps, user, pending);
  if (pending.kind === "captcha") pending.captcha = newCaptcha();
  c.var.session.pending = pending;
  return c.redirect(skin.paths.challenge, 303);
}

async function postChallenge(c: Ctx, deps: SandboxDeps): Promise<Response> {
  const found = currentChallenge(c, deps);
  if (found instanceof Response) return found;
  const { user, pending } = found;
  const remember = c.var.form["remember"] !== undefined;
  switch (pending.kind) {
    case "totp":
    case "email":
    case "sms": {
      const form = fields(c, "code");
      if (!form) return errorPage(c, 400);
      const code = normalizeCode(form.code);
      const outcome = pending.kind === "totp" ? (verifyTotp(user, code, deps.clock()) ? "ok" : "wrong") : checkSentCode(deps, pending, code);
      if (outcome === "ok") return completeSignIn(c, deps, user, pending.next, remember);
      if (outcome === "expired") return showChallenge(c, user, pending, { error: SIGN_IN_TEXT.expiredCode });
      pending.attempts += 1;
      if (pending.attempts >= MAX_CODE_ATTEMPTS) return abandon(c, SIGN_IN_TEXT.tooManyCodes);
      return showChallenge(c, user, pending, { error: SIGN_IN_TEXT.wrongCode });
    }
    case "device":
      if (pending.deviceApproved) return completeSignIn(c, deps, user, pending.next, remember);
      return showChallenge(c, user, pending, { error: SIGN_IN_TEXT.notApproved });
    case "captcha": {
      const form = fields(c, "tiles");
      if (!form) return errorPage(c, 400);
      if (pending.captcha && captchaSolved(pending.captcha, form.tiles)) return completeSignIn(c, deps, user, pending.next, remember);
      pending.captcha = newCaptcha();
      return showChallenge(c, user, pending, { error: SIGN_IN_TEXT.wrongTiles });
    }
    case "question": {
      // Wrong answers count toward the same limit as wrong codes.
      const form = fields(c, "answer");
      if (!form) return errorPage(c, 400);
      if (securityAnswerMatches(user, form.answer)) return completeSignIn(c, deps, user, pending.next, remember);
      pending.attempts += 1;
      if (pending.attempts >= MAX_CODE_ATTEMPTS) return abandon(c, SIGN_IN_TEXT.tooManyAnswers);
      return showChallenge(c, user, pending, { error: SIGN_IN_TEXT.wrongAnswer });
    }
    case "magic_link":
      // The answer arrives by mail; this form only keeps "remember this device" for when the link is opened.
      pending.remember = remember;
      return showChallenge(c, user, pending);
    case "checkpoint":
      return showChallenge(c, user, pending);
  }
}

/**
 * A mailed sign-in link, opened. Like a real platform's, it finishes only the sign-in that sent it,
 * in the browser that typed the password (the session's pending sign-in holds its token): a link
 * forwarded to or intercepted by someone else signs nobody in there, and stays usable where it
 * belongs. It works once (signing in drops the pending sign-in) and for CODE_LIFETIME_MS.
 */
function openSignInLink(c: Ctx, deps: SandboxDeps): Response {
  const token = c.req.param("token") ?? "";
  const pending = c.var.session.pending;
  const user = pending ? deps.state.users.get(pending.handle) : undefined;
  const link = pending?.kind === "magic_link" && deps.sessions.isLive(pending) ? pending.link : undefined;
  if (user && pending && link && sameToken(link.token, token) && deps.clock().getTime() <= link.expiresAt.getTime()) {
    return completeSignIn(c, deps, user, pending.next, pending.remember ?? false);
  }
  const reason = deps.sessions.isWaitingForLink(token) ? "elsewhere" : "expired";
  return renderPage(c, SIGN_IN_LINK_TEXT[reason].heading, signInLinkRefusedBody(c.var.skin, reason), reason === "elsewhere" ? 403 : 410);
}

/** The session's sign-in waiting at its challenge, or a redirect to sign-in when there is none. */
function currentChallenge(c: Ctx, deps: SandboxDeps): { user: User; pending: PendingSignIn } | Response {
  const session = c.var.session;
  const pending = session.pending;
  if (!pending) return c.redirect(c.var.skin.paths.signIn, c.req.method === "GET" ? 302 : 303);
  const user = deps.state.users.get(pending.handle);
  if (!user || !deps.sessions.isLive(pending)) return abandon(c, SIGN_IN_TEXT.attemptExpired);
  return { user, pending };
}

function abandon(c: Ctx, message: string): Response {
  delete c.var.session.pending;
  c.var.session.flash = { tone: "error", text: message };
  return c.redirect(c.var.skin.paths.signIn, c.req.method === "GET" ? 302 : 303);
}

function showChallenge(c: Ctx, user: User, pending: PendingSignIn, extra: { error?: string; notice?: string } = {}): Response {
  const { heading } = challengeIntro(user, pending);
  const body = challengeBody({ skin: c.var.skin, csrf: c.var.session.csrf, user, pending, ...extra });
  return renderPage(c, heading, body, extra.error ? 422 : 200);
}

/** Sends a new code (the older one stops counting): to the outbox, and mailed or texted where the user can receive it. */
function sendCode(deps: SandboxDeps, user: User, pending: PendingSignIn): void {
  const code = newCode();
  pending.code = { value: code, expiresAt: new Date(deps.clock().getTime() + CODE_LIFETIME_MS) };
  const entry = deps.state.deliverCode(user, pending.kind === "sms" ? "sms" : "email", code);
  if (entry.channel === "email") deps.courier.mail({ to: user.email, subject: entry.subject ?? entry.text, text: entry.text });
  else if (user.smsUrl !== undefined) deps.courier.text(user.smsUrl, entry.text);
}

/** Sends a new one-time sign-in link (the older one stops working) to the outbox and the user's e-mail. */
function sendLink(c: Ctx, deps: SandboxDeps, user: User, pending: PendingSignIn): void {
  const token = randomToken();
  pending.link = { token, expiresAt: new Date(deps.clock().getTime() + CODE_LIFETIME_MS) };
  const origin = deps.origin ?? new URL(c.req.url).origin;
  const entry = deps.state.deliverLink(user, `${origin}${SIGN_IN_LINK_PATH}/${token}`);
  deps.courier.mail({ to: user.email, subject: entry.subject ?? entry.text, text: entry.text });
}

function checkSentCode(deps: SandboxDeps, pending: PendingSignIn, code: string): "ok" | "wrong" | "expired" {
  if (!pending.code || code !== pending.code.value) return "wrong";
  if (deps.clock().getTime() > pending.code.expiresAt.getTime()) return "expired";
  return "ok";
}

/** Binds a fresh session to the user, remembers the device if asked, and goes where the person was heading. */
function completeSignIn(c: Ctx, deps: SandboxDeps, user: User, next: string | undefined, remember: boolean): Response {
  const session = deps.sessions.signIn(c.var.session, user.handle);
  setSessionCookie(c, session);
  if (remember) {
    const token = deps.sessions.remember(getCookie(c, DEVICE_COOKIE), user.handle);
    setCookie(c, DEVICE_COOKIE, token, { path: "/", httpOnly: true, sameSite: "Lax", maxAge: DEVICE_LIFETIME_SECONDS });
  }
  return c.redirect(next ?? c.var.skin.paths.home, c.req.method === "GET" ? 302 : 303);
}
