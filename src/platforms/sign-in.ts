import { setTimeout as sleep } from "node:timers/promises";
import { TOTP } from "otpauth";
import type { Locator, Page } from "playwright";
import type { ChallengeKind } from "../domain/challenges.js";
import { ActionFailure } from "../domain/errors.js";
import type { DriverContext, SessionProbe } from "./driver.js";

/**
 * How a platform signs in, declared as data (DESIGN §14): where an action starts, the form, the
 * refusal, and the challenge pages. `signInWith` is the one loop every driver shares: fill the form,
 * meet each challenge (a stored TOTP secret answers its own; every other kind pauses at
 * `needs_input`), tell a refused password from a refused answer.
 */
export interface SignInSpec {
  /** Where every action starts (a page that shows whether the account is signed in). */
  start: string;
  /** How a health check tells a live session without opening a page; left out, it opens `start`. */
  probe?: SessionProbe;
  /** How long the start page may take to show either state (a large admin app); the engine's default otherwise. */
  startTimeoutMs?: number;
  signedIn(page: Page): Locator;
  /** What `start` shows when the session is gone. */
  signedOut(page: Page): Locator;
  form: {
    /** Opened when the form is not on the signed-out page itself. */
    path?: string;
    username(page: Page): Locator;
    password(page: Page): Locator;
    submit(page: Page): Locator;
    /** A "keep me signed in" box, checked so the saved session lasts. */
    remember?(page: Page): Locator;
  };
  /** The platform's refusal of the credentials (or of an answer that cannot be tried again), shown after submitting. */
  refused(page: Page): Locator;
  /** The page's own words for a refusal; `refused` itself when left out. */
  alert?(page: Page): Locator;
  challenges: readonly ChallengePage[];
}

/** A page that asks for more than the password. */
export interface ChallengePage {
  kind: ChallengeKind;
  /** What tells this page apart. */
  shows(page: Page): Locator;
  /** Where an answer is typed; left out, only the page moves it on (the other device, the live browser). */
  field?(page: Page): Locator;
  /** The button that sends the answer. */
  submit?(page: Page): Locator;
  /**
   * The platform mailed a one-time sign-in link instead of a code: the answer is that link (from
   * the inbox, the API, MCP or the live page), opened in the account's own page when it is of the
   * platform's origin. Such a page has no field.
   */
  link?: boolean;
  /**
   * What says an answer was wrong. Left out, the field shown again after sending is the refusal (a
   * page that reloads); an app that stays on the page while it checks the answer names its message.
   */
  refusal?(page: Page): Locator;
  /** "Remember this device": checked before answering, so the next sign-in is spared the challenge. */
  remember?(page: Page): Locator;
  /** The challenge's message: the page's own words. */
  message(page: Page): Promise<string>;
  /**
   * Shown on the sign-in form itself, before it is sent (a question after failed sign-ins): the
   * credentials are filled in and the form is left for whoever answers it in the live browser.
   */
  onForm?: boolean;
}

const TOTP_PERIOD_MS = 30_000;

/** The settle options of the spec's longer first wait, if it has one. */
function waitOf(spec: SignInSpec): { timeoutMs: number } | undefined {
  return spec.startTimeoutMs === undefined ? undefined : { timeoutMs: spec.startTimeoutMs };
}

/** How every challenge page but `challenge` shows. */
function otherChallenges(spec: SignInSpec, page: Page, challenge: ChallengePage): Locator[] {
  return spec.challenges.filter((other) => other !== challenge).map((other) => other.shows(page));
}

/** Every action starts here: the start page if the session holds, else a sign-in with stored credentials. */
export async function ensureSignedIn(spec: SignInSpec, context: DriverContext): Promise<void> {
  const { page } = context;
  await context.open(spec.start);
  const state = await context.settle({ signedIn: spec.signedIn(page), signedOut: spec.signedOut(page) }, waitOf(spec));
  if (state === "signedIn") return;
  await signInWith(spec, context);
  await context.markConnected(undefined);
}

/** Signs in with the stored credentials, meeting every challenge the platform puts up. */
export async function signInWith(spec: SignInSpec, context: DriverContext): Promise<void> {
  const { page } = context;
  const { password } = context.secrets();
  if (password === undefined) {
    throw new ActionFailure("signed_out", "The account is signed out and has no stored password: send the owner a sign-in link, or add a password with PATCH /v1/accounts/{id}.");
  }
  if (spec.form.path) {
    await context.open(spec.form.path);
    await context.settle({ form: spec.form.password(page) });
  }
  await spec.form.username(page).fill(context.username);
  await spec.form.password(page).fill(password);
  await tickRemember(spec.form.remember?.(page));
  if (!(await onFormChallenge(spec, page))) await spec.form.submit(page).click();
  const challenges = Object.fromEntries(spec.challenges.map((challenge, index) => [`challenge${index}`, challenge.shows(page)]));
  for (;;) {
    const state = await context.settle<string>({ signedIn: spec.signedIn(page), refused: spec.refused(page), ...challenges }, waitOf(spec));
    if (state === "signedIn") return;
    if (state === "refused") return refusedSignIn(context, await alertText(spec, page));
    await answerChallenge(spec, context, spec.challenges[Number(state.slice("challenge".length))]!);
  }
}

/**
 * Ticks a "remember this device" box the page shows, if it is not ticked yet: the box's own click
 * (its input and change events, as a person's tick sends), in one look at the page — Playwright's
 * `check()` takes about four (state, scroll, stable frames and click, state again).
 */
async function tickRemember(box: Locator | undefined): Promise<void> {
  await box?.evaluateAll((found) => {
    const element = found[0];
    if (!(element instanceof HTMLElement)) return;
    const ticked = element instanceof HTMLInputElement ? element.checked : element.getAttribute("aria-checked") === "true";
    if (!ticked) element.click();
  });
}

async function onFormChallenge(spec: SignInSpec, page: Page): Promise<boolean> {
  for (const challenge of spec.challenges) if (challenge.onForm && (await challenge.shows(page).first().isVisible())) return true;
  return false;
}

/** The platform refused the credentials: a lost session whose credentials no longer work is `signed_out`. */
async function refusedSignIn(context: DriverContext, message: string): Promise<never> {
  if (context.hadSession && context.type !== "connect") {
    throw new ActionFailure("signed_out", `The session ended and the stored credentials no longer sign in: ${message}`);
  }
  throw new ActionFailure("login_failed", `The platform refused the sign-in: ${message}`);
}

async function alertText(spec: SignInSpec, page: Page): Promise<string> {
  const alert = (spec.alert ?? spec.refused)(page);
  return (await alert.count()) > 0 ? (await alert.first().innerText()).trim() : "no reason given";
}

/**
 * Resolves once the page has moved past `challenge` (someone met it in the live browser): signed
 * in, or at another challenge; for a challenge without a field, also refused. A code page shows its
 * refusal beside the field and is still the same challenge.
 */
function leftChallenge(spec: SignInSpec, context: DriverContext, challenge: ChallengePage) {
  const { page } = context;
  const elsewhere = otherChallenges(spec, page, challenge);
  const moved = [spec.signedIn(page), ...(challenge.field ? [] : [spec.refused(page)]), ...elsewhere].reduce((any, locator) => any.or(locator));
  return (signal: AbortSignal) => context.whenVisible(moved, signal);
}

async function answerChallenge(spec: SignInSpec, context: DriverContext, challenge: ChallengePage): Promise<void> {
  const { page } = context;
  const message = await challenge.message(page);
  if (!challenge.field) await tickRemember(challenge.remember?.(page));
  if (challenge.link) return answerWithLink(spec, context, challenge, message);
  const field = challenge.field?.(page);
  if (!field) {
    // Nothing to type through the API: only the other device or the live browser moves this page on.
    await context.challenge({ kind: challenge.kind, message, resolvedOnPage: leftChallenge(spec, context, challenge) });
    return;
  }
  const { totpSecret } = context.secrets();
  if (challenge.kind === "two_factor_code" && totpSecret) return submitStoredTotp(spec, context, challenge, totpSecret);
  // A refused answer asks again on the same page (its refusal beside the field, which may look like a refused sign-in).
  for (;;) {
    const answering = context.challenge({ kind: challenge.kind, message, resolvedOnPage: leftChallenge(spec, context, challenge) });
    const answer = await tickingWhileWaiting(answering, challenge.remember?.(page), context.signal);
    if (answer === undefined) return;
    if ((await submitAnswer(spec, context, challenge, answer)) === "moved") return;
    await context.refuseAnswer(await alertText(spec, page));
  }
}

/** How long an answer may take before its wait is used to tick "remember this device". */
const TICK_WHILE_WAITING_AFTER_MS = 100;

/**
 * The answer to a code challenge, with "remember this device" ticked while it is awaited (a person
 * answering in the live page finds it ticked) — unless the answer comes at once: a code the inbox
 * already holds is typed first and the box ticked after it (`submitAnswer`), since a page's first
 * tick costs it ≈ 50 ms here. Ticking while waiting is best effort: the page may be moving on under
 * the person's hand.
 */
async function tickingWhileWaiting(answering: Promise<string | undefined>, box: Locator | undefined, signal: AbortSignal): Promise<string | undefined> {
  if (!box) return answering;
  const waiting = Symbol("waiting");
  const first = await Promise.race([answering, sleep(TICK_WHILE_WAITING_AFTER_MS, waiting, { signal })]);
  if (first !== waiting) return first as string | undefined;
  await tickRemember(box).catch(() => undefined);
  return answering;
}

/**
 * The platform mailed a sign-in link: each answer (from the inbox, the API, MCP or the live page)
 * is opened in the account's own page when it is a link of the platform's origin, never anything
 * else; one the platform does not take is a refused answer.
 */
async function answerWithLink(spec: SignInSpec, context: DriverContext, challenge: ChallengePage, message: string): Promise<void> {
  const { page } = context;
  for (;;) {
    const answer = await context.challenge({ kind: challenge.kind, message, resolvedOnPage: leftChallenge(spec, context, challenge) });
    if (answer === undefined) return;
    const link = platformLink(answer, context.baseUrl);
    if (!link) {
      await context.refuseAnswer(`That is not a link of the platform (${new URL(context.baseUrl).origin}): answer with the sign-in link from the mail.`);
      continue;
    }
    await context.open(link);
    const state = await context.settle(
      { signedIn: spec.signedIn(page), again: challenge.refusal?.(page) ?? challenge.shows(page), refused: spec.refused(page), moved: anyOther(spec, page, challenge) },
      waitOf(spec),
    );
    if (state === "signedIn" || state === "moved") return;
    if (state === "refused") throw new ActionFailure("login_failed", `The platform refused the sign-in link: ${await alertText(spec, page)}`);
    await context.refuseAnswer("The platform did not take the sign-in link (expired, used, or from another sign-in).");
  }
}

/** `answer` as a URL of the platform's own origin, or undefined. */
function platformLink(answer: string, baseUrl: string): string | undefined {
  try {
    const url = new URL(answer.trim());
    return url.origin === new URL(baseUrl).origin ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** Types an answer into the challenge's field and sends it; "refused" when the same challenge asks again. */
async function submitAnswer(spec: SignInSpec, context: DriverContext, challenge: ChallengePage, answer: string): Promise<"moved" | "refused"> {
  const { page } = context;
  const field = challenge.field!(page);
  await field.fill(answer);
  // Ticked once the code is typed, if its wait did not tick it (`tickingWhileWaiting`).
  await tickRemember(challenge.remember?.(page));
  await (challenge.submit ? challenge.submit(page).click() : field.press("Enter"));
  const state = await context.settle(
    { signedIn: spec.signedIn(page), again: challenge.refusal?.(page) ?? field, refused: spec.refused(page), moved: anyOther(spec, page, challenge) },
    waitOf(spec),
  );
  if (state === "again") return "refused";
  // Back at the form: the platform gave up on this sign-in (too many wrong answers).
  if (state === "refused") throw new ActionFailure("login_failed", `The platform refused the answer: ${await alertText(spec, page)}`);
  return "moved";
}

function anyOther(spec: SignInSpec, page: Page, challenge: ChallengePage): Locator {
  const others = otherChallenges(spec, page, challenge);
  return others.length > 0 ? others.reduce((any, locator) => any.or(locator)) : spec.signedIn(page);
}

/**
 * Computes the code from the stored secret, never submitting the same time step twice.
 * A refused code may only mean its step was used elsewhere (the owner's own app, another
 * service): the next step's code is tried once before the secret is called wrong.
 */
async function submitStoredTotp(spec: SignInSpec, context: DriverContext, challenge: ChallengePage, secret: string): Promise<void> {
  const totp = new TOTP({ secret, digits: 6, period: 30, algorithm: "SHA1" });
  for (let attempt = 1; ; attempt++) {
    const step = await claimNextStep(context);
    const outcome = await submitAnswer(spec, context, challenge, totp.generate({ timestamp: step * TOTP_PERIOD_MS }));
    if (outcome === "moved") return;
    if (attempt === 1) continue;
    throw new ActionFailure("login_failed", `The platform refused the code computed from the stored TOTP secret: ${await alertText(spec, context.page)} Fix it with PATCH /v1/accounts/{id}.`);
  }
}

/** The current time step, or the next one when this one was already claimed (waiting for it). */
async function claimNextStep(context: DriverContext): Promise<number> {
  for (;;) {
    const now = context.clock.now().getTime();
    const step = Math.floor(now / TOTP_PERIOD_MS);
    if (await context.claimTotpStep(step)) return step;
    await sleep((step + 1) * TOTP_PERIOD_MS - now + 50, undefined, { signal: context.signal });
  }
}
