import type { Locator, Page } from "playwright";
import { ActionFailure } from "../domain/errors.js";
import type { FailureDetector } from "../platforms/driver.js";

/** How long a page may take to show an expected state before the driver is out of its depth. */
export const DEFAULT_SETTLE_MS = 10_000;

/**
 * Waits until one of `states` is visible, or a failure detector's state shows (then
 * fails the action with its code). Nothing recognisable in time is `ui_changed`: the
 * page does not look as the driver expects.
 */
export async function settle<K extends string>(
  page: Page,
  states: Record<K, Locator>,
  failures: readonly FailureDetector[],
  timeoutMs: number = DEFAULT_SETTLE_MS,
): Promise<K> {
  const named = Object.entries(states) as [K, Locator][];
  const detectors = failures.map((failure) => ({ failure, locator: failure.locate(page) }));
  const failing = either(detectors.map(({ locator }) => locator));
  const any = either([...named.map(([, locator]) => locator), ...(failing ? [failing] : [])])!;
  const deadline = Date.now() + timeoutMs;
  // The first expected state showing with no failure beside it, in one look (one round trip): an
  // element of the page that holds a visible one of the first and no visible one of the others.
  const first = named[0]!;
  const firstAlone = failing ? page.locator(":root").filter({ has: first[1].filter({ visible: true }), hasNot: failing.filter({ visible: true }) }) : first[1];
  // A page just navigated to is looked at once it is parsed: looked at sooner, it shows nothing
  // yet and Playwright's next look comes 20, then 50 ms later.
  await page.waitForLoadState("domcontentloaded", { timeout: timeoutMs }).catch(() => undefined);
  if (await firstAlone.first().isVisible()) return first[0];
  try {
    await any.first().waitFor({ state: "visible", timeout: Math.max(1, deadline - Date.now()) });
  } catch (error) {
    if (isTimeout(error)) {
      throw new ActionFailure("ui_changed", `The page at ${safeUrl(page)} did not show what the driver expects (${named.map(([name]) => name).join(", ")}).`);
    }
    throw error;
  }
  if (await firstAlone.first().isVisible()) return first[0];
  // A failure state wins over any other expected one.
  const showing = await Promise.all(detectors.map(({ locator }) => locator.first().isVisible()));
  const failure = detectors.find((_, index) => showing[index]);
  if (failure) throw new ActionFailure(failure.failure.code, failure.failure.message);
  for (const [name, locator] of named.slice(1)) if (await locator.first().isVisible()) return name;
  // The state flickered away between the wait and the check: look again.
  return settle(page, states, failures, Math.max(1, deadline - Date.now()));
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
    return `${url.origin}${url.pathname}`;
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
