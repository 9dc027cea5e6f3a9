import { TOTP } from "otpauth";
import type { Locator, Page } from "playwright";
import { ActionFailure } from "../../domain/errors.js";
import type { DriverContext } from "../driver.js";
import { CHALLENGE_PAGES, PAGES, PATHS, SIGN_IN, challengeHeading, type ChallengePage } from "./pages.js";

const TOTP_PERIOD_MS = 30_000;

/** Every action starts here: the home page if the session holds, else a sign-in with stored credentials. */
export async function ensureSignedIn(context: DriverContext): Promise<void> {
  const { page } = context;
  await context.open(PATHS.home);
  const state = await context.settle({ home: PAGES.home(page), signIn: PAGES.signIn(page) });
  if (state === "signIn") {
    await signIn(context);
    await context.markConnected(undefined);
  }
}

/** The signed-in user's handle: the last segment of the navigation's profile link. */
export async function signedInAs(page: Page): Promise<string | undefined> {
  const link = PAGES.profileLink(page);
  if ((await link.count()) === 0) return undefined;
  const href = await link.first().getAttribute("href");
  return href ? decodeURIComponent(href.split("/").filter(Boolean).pop() ?? "") || undefined : undefined;
}

async function signIn(context: DriverContext): Promise<void> {
  const { page } = context;
  const { password } = context.secrets();
  if (password === undefined) {
    await context.markSignedOut();
    throw new ActionFailure("signed_out", "The account is signed out and has no stored password: send the owner a sign-in link, or add a password with PATCH /v1/accounts/{id}.");
  }
  const username = context.username;
  await SIGN_IN.username(page).fill(username);
  await SIGN_IN.password(page).fill(password);
  await SIGN_IN.submit(page).click();
  for (;;) {
    const state = await context.settle({
      home: PAGES.home(page),
      refused: PAGES.signIn(page),
      ...Object.fromEntries(CHALLENGE_PAGES.map(({ kind, heading }) => [kind, challengeHeading(page, heading)])),
    });
    if (state === "home") return;
    if (state === "refused") return refusedSignIn(context, await alertText(context));
    await answerChallenge(context, CHALLENGE_PAGES.find(({ kind }) => kind === state)!);
  }
}

/** The platform refused the credentials: a lost session whose credentials no longer work is `signed_out`. */
async function refusedSignIn(context: DriverContext, message: string): Promise<never> {
  if (context.hadSession && context.type !== "connect") {
    await context.markSignedOut();
    throw new ActionFailure("signed_out", `The session ended and the stored credentials no longer sign in: ${message}`);
  }
  throw new ActionFailure("login_failed", `The platform refused the sign-in: ${message}`);
}

async function alertText(context: DriverContext): Promise<string> {
  const alert = PAGES.alert(context.page);
  return (await alert.count()) > 0 ? (await alert.first().innerText()).trim() : "no reason given";
}

/** Resolves once the page has moved past the challenge (the home page shows). */
function leftChallenge(context: DriverContext) {
  return (signal: AbortSignal) => context.whenVisible(PAGES.home(context.page), signal);
}

async function answerChallenge(context: DriverContext, challenge: ChallengePage): Promise<void> {
  const { page } = context;
  const message = (await page.getByRole("main").getByRole("paragraph").first().innerText()).trim();
  // Remembering the device spares the next sign-in its challenge.
  const remember = SIGN_IN.remember(page);
  if ((await remember.count()) > 0) await remember.check();
  const field = challenge.field?.(page);
  if (!field) {
    // Nothing to type: only the other device or the live browser moves this page on.
    await context.challenge({ kind: challenge.kind, message, resolvedOnPage: leftChallenge(context) });
    return;
  }
  const { totpSecret } = context.secrets();
  if (challenge.kind === "two_factor_code" && totpSecret) return submitStoredTotp(context, field, totpSecret);
  const answer = await context.challenge({ kind: challenge.kind, message, resolvedOnPage: leftChallenge(context) });
  if (answer === undefined) return;
  await submitAnswer(context, field, answer);
  const after = await context.settle({ home: PAGES.home(page), refused: field, signIn: PAGES.signIn(page) });
  if (after === "refused") await context.refuseAnswer(await alertText(context));
  if (after === "signIn") throw new ActionFailure("login_failed", `The platform refused the answer: ${await alertText(context)}`);
}

/** Types a code or an answer into the challenge page's field and submits it. */
async function submitAnswer(context: DriverContext, field: Locator, answer: string): Promise<void> {
  await field.fill(answer);
  await SIGN_IN.verify(context.page).click();
}

/**
 * Computes the code from the stored secret, never submitting the same time step twice.
 * A refused code may only mean its step was used elsewhere (the owner's own app, another
 * service): the next step's code is tried once before the secret is called wrong.
 */
async function submitStoredTotp(context: DriverContext, field: Locator, secret: string): Promise<void> {
  const totp = new TOTP({ secret, digits: 6, period: 30, algorithm: "SHA1" });
  for (let attempt = 1; ; attempt++) {
    const step = await claimNextStep(context);
    await submitAnswer(context, field, totp.generate({ timestamp: step * TOTP_PERIOD_MS }));
    const after = await context.settle({ home: PAGES.home(context.page), refused: field, signIn: PAGES.signIn(context.page) });
    if (after === "home") return;
    if (after === "refused" && attempt === 1) continue;
    throw new ActionFailure("login_failed", `The platform refused the code computed from the stored TOTP secret: ${await alertText(context)} Fix it with PATCH /v1/accounts/{id}.`);
  }
}

/** The current time step, or the next one when this one was already claimed (waiting for it). */
async function claimNextStep(context: DriverContext): Promise<number> {
  for (;;) {
    const now = context.clock.now().getTime();
    const step = Math.floor(now / TOTP_PERIOD_MS);
    if (await context.claimTotpStep(step)) return step;
    await sleep((step + 1) * TOTP_PERIOD_MS - now + 50, context.signal);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}
