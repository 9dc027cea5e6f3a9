import { setTimeout as sleep } from "node:timers/promises";
import type { Locator, Page } from "playwright";
import { ActionFailure, PlatformTimeout } from "../domain/errors.js";
import type { FailureDetector } from "../platforms/driver.js";
import { PageLoad } from "./page-load.js";

/** How long a loaded page may take to show an expected state (its own scripts at work) before the driver is out of its depth. */
export const DEFAULT_SETTLE_MS = 10_000;

/** A page still arriving after this many page timeouts did not answer, however it trickled in. */
const MAX_ARRIVAL_TIMEOUTS = 4;

/** The one rule for every wait on a platform's page (DESIGN §3): how long a page may take to arrive, and whose it is. */
export interface PageRule {
  /** `ACTION_SERVICE_PAGE_TIMEOUT_SECONDS`, in ms. */
  pageTimeoutMs: number;
  platformTitle: string;
}

/**
 * Waits until one of `states` is visible, or a failure detector's state shows (then fails the action
 * with its code). A page is judged only once it has loaded: while it is arriving (a navigation in
 * flight, its document not loaded) it is waited for up to the page timeout, past which the platform
 * did not answer (`PlatformTimeout`, never `ui_changed`), counted from the last time it was heard
 * from (`arrivalDeadline`); once loaded it has `settleMs` to show a
 * state, counted from its load, and is looked at once more after the renderer has drawn a frame
 * before it is called `ui_changed`: the page does not look as the driver expects.
 */
export async function settle<K extends string>(
  page: Page,
  states: Record<K, Locator>,
  failures: readonly FailureDetector[],
  rule: PageRule,
  settleMs: number = DEFAULT_SETTLE_MS,
): Promise<K> {
  const named = Object.entries(states) as [K, Locator][];
  const detectors: Detector[] = failures.map((failure) => ({ failure, locator: failure.locate(page) }));
  const failing = either(detectors.map(({ locator }) => locator));
  const any = either([...named.map(([, locator]) => locator), ...(failing ? [failing] : [])])!;
  const load = PageLoad.of(page);
  const started = performance.now();
  // The first expected state showing with no failure beside it, in one look (one call, the usual
  // case): an element of the page that holds a visible one of the first and no visible one of the
  // failures. Otherwise every state is looked at (`showing`).
  const first = named[0]!;
  const firstAlone = failing ? page.locator(":root").filter({ has: first[1].filter({ visible: true }), hasNot: failing.filter({ visible: true }) }) : first[1];
  // A page just navigated to is looked at once it is parsed: looked at sooner, it shows nothing
  // yet and Playwright's next look comes 20, then 50 ms later.
  await page.waitForLoadState("domcontentloaded", { timeout: rule.pageTimeoutMs }).catch(() => undefined);
  if (await firstAlone.first().isVisible()) return first[0];
  const now = await showing(named, detectors, failing);
  if (now !== undefined) return now;
  // One wait for any state, for as long as the page may still arrive and then settle; the loop below
  // decides when to stop listening to it.
  const shown = any
    .first()
    .waitFor({ state: "visible", timeout: (MAX_ARRIVAL_TIMEOUTS + 1) * rule.pageTimeoutMs + settleMs })
    .then(
      () => true,
      (error: unknown) => {
        if (isTimeout(error)) return false;
        throw error;
      },
    );
  void shown.catch(() => undefined);
  const uiChanged = (): ActionFailure =>
    new ActionFailure("ui_changed", `The page at ${safeUrl(page)} did not show what the driver expects (${named.map(([name]) => name).join(", ")}).`);
  for (;;) {
    const arriving = load.arrivingSince;
    const until = arriving !== undefined ? arrivalDeadline(load, rule) : Math.max(started, load.loadedAt) + settleMs;
    const left = until - performance.now();
    const outcome = left <= 0 ? "waited" : await Promise.race([shown, load.nextChange().then(() => "changed" as const), sleep(left, "waited" as const, { ref: false })]);
    if (outcome === true) break;
    if (outcome === "changed") continue;
    // Out of time, one way or the other: a page still arriving did not answer; a loaded one is judged.
    if (load.arrivingSince !== undefined) {
      // Looked at as it is now (the events a stalled process has not read yet included), and judged by the time that is really up.
      if ((await load.stillArriving()) && performance.now() >= arrivalDeadline(load, rule)) throw platformTimeout(page, rule);
      continue;
    }
    if (await lookedAtRendered(page, any, rule)) break;
    throw uiChanged();
  }
  const state = await showing(named, detectors, failing);
  if (state !== undefined) return state;
  // The state flickered away between the wait and the check: look again.
  return settle(page, states, failures, rule, Math.max(1, settleMs - (performance.now() - started)));
}

/**
 * Which state the page shows, every state and the failure detectors looked at together (one round
 * trip to the page, not one per look; the detectors as one look, each alone only when one shows): a
 * failure's state wins over any expected one, then the states in their order. Undefined when none
 * shows.
 */
async function showing<K extends string>(named: readonly [K, Locator][], detectors: readonly Detector[], failing: Locator | undefined): Promise<K | undefined> {
  const [states, failed] = await Promise.all([Promise.all(named.map(([, locator]) => locator.first().isVisible())), failing ? failing.first().isVisible() : false]);
  if (failed) {
    const shown = await Promise.all(detectors.map(({ locator }) => locator.first().isVisible()));
    const failure = detectors.find((_, index) => shown[index]);
    if (failure) throw new ActionFailure(failure.failure.code, failure.failure.message);
  }
  return named.find((_, index) => states[index])?.[0];
}

/** A platform's failure detector and where it looks on this page. */
interface Detector {
  failure: FailureDetector;
  locator: Locator;
}

/**
 * How long a page may go on arriving: the page timeout counted from the last time the platform was
 * heard from about it (its response, a part of the document), so a platform that keeps answering
 * is slow, not silent; and never more than `MAX_ARRIVAL_TIMEOUTS` page timeouts in all, so a page
 * that trickles in forever ends too.
 */
function arrivalDeadline(load: PageLoad, rule: PageRule): number {
  const arriving = load.arrivingSince ?? performance.now();
  return Math.min((load.heardAt ?? arriving) + rule.pageTimeoutMs, arriving + MAX_ARRIVAL_TIMEOUTS * rule.pageTimeoutMs);
}

/** The platform did not answer: its page is still arriving past the page timeout. */
export function platformTimeout(page: Page, rule: PageRule): PlatformTimeout {
  return new PlatformTimeout(Math.round(rule.pageTimeoutMs / 1000), rule.platformTitle, safeUrl(page));
}

/**
 * A Playwright timeout met anywhere on a platform's page (a click whose navigation never came, a
 * `goto`): the platform did not answer when the page is still arriving, else the page did not
 * respond as the driver expects.
 */
export function judgeTimeout(page: Page, rule: PageRule): ActionFailure {
  if (PageLoad.of(page).arrivingSince !== undefined) return platformTimeout(page, rule);
  return new ActionFailure("ui_changed", `The page at ${safeUrl(page)} did not respond as the driver expects.`);
}

/**
 * The last look before `ui_changed`: once the renderer has run a frame (or a task) after the wait,
 * so a page whose renderer waited for CPU is seen as it is now. A renderer that does not answer
 * within the page timeout is a platform page that did not arrive.
 */
async function lookedAtRendered(page: Page, any: Locator, rule: PageRule): Promise<boolean> {
  const drawn = page
    .evaluate(() => new Promise<void>((resolve) => (requestAnimationFrame(() => resolve()), setTimeout(resolve, 100))))
    .then(() => true, () => false);
  if (!(await Promise.race([drawn, sleep(rule.pageTimeoutMs, false, { ref: false })]))) throw platformTimeout(page, rule);
  return any.first().isVisible();
}

/** Any of the locators, or undefined for none. */
function either(locators: readonly Locator[]): Locator | undefined {
  return locators.length === 0 ? undefined : locators.slice(1).reduce((combined, locator) => combined.or(locator), locators[0]!);
}

/**
 * Playwright's TimeoutError, known by its name: this module and the executor never load
 * Playwright themselves, so that a service starts without it (it is loaded with the browser).
 */
export function isTimeout(error: unknown): boolean {
  return error instanceof Error && error.name === "TimeoutError";
}

/** The page's URL without query or fragment (they may hold tokens). */
export function safeUrl(page: Page): string {
  try {
    const url = new URL(page.url());
    return url.origin === "null" ? `${url.protocol}${url.pathname}` : `${url.origin}${url.pathname}`;
  } catch {
    return "about:blank";
  }
}

/** How often a paused page is looked at between navigations (a page moved on without one). */
const PAUSED_CHECK_MS = 5_000;

/**
 * Resolves once `locator` is visible on a page that waits for a person (a challenge left open
 * in the live browser or on another device): checked at each main-frame load and every 5 s,
 * never every animation frame as `waitFor` does, so hundreds of paused pages cost next to no CPU.
 * Rejects with the signal's reason when aborted, or when the page closes.
 */
export function whenVisible(page: Page, locator: Locator, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let checking = false;
    const look = (): void => {
      if (checking) return;
      checking = true;
      locator
        .first()
        .isVisible()
        .then((visible) => {
          if (visible) done(resolve);
        })
        .catch(() => undefined)
        .finally(() => (checking = false));
    };
    const onLoad = (): void => look();
    const onClose = (): void => done(() => reject(new Error("the page closed")));
    const onAbort = (): void => done(() => reject(signal.reason));
    const timer = setInterval(look, PAUSED_CHECK_MS);
    const done = (finish: () => void): void => {
      clearInterval(timer);
      page.off("load", onLoad);
      page.off("close", onClose);
      signal.removeEventListener("abort", onAbort);
      finish();
    };
    if (signal.aborted) return onAbort();
    page.on("load", onLoad);
    page.on("close", onClose);
    signal.addEventListener("abort", onAbort, { once: true });
    look();
  });
}
