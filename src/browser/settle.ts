import { errors, type Locator, type Page } from "playwright";
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
  const all = [...named.map(([, locator]) => locator), ...detectors.map(({ locator }) => locator)];
  const any = all.slice(1).reduce((combined, locator) => combined.or(locator), all[0]!);
  try {
    await any.first().waitFor({ state: "visible", timeout: timeoutMs });
  } catch (error) {
    if (error instanceof errors.TimeoutError) {
      throw new ActionFailure("ui_changed", `The page at ${safeUrl(page)} did not show what the driver expects (${named.map(([name]) => name).join(", ")}).`);
    }
    throw error;
  }
  // One look at every candidate at once: a failure state wins over an expected one.
  const [failing, showing] = await Promise.all([
    Promise.all(detectors.map(({ locator }) => locator.first().isVisible())),
    Promise.all(named.map(([, locator]) => locator.first().isVisible())),
  ]);
  const failure = detectors.find((_, index) => failing[index]);
  if (failure) throw new ActionFailure(failure.failure.code, failure.failure.message);
  const state = named.find((_, index) => showing[index]);
  if (state) return state[0];
  // The state flickered away between the wait and the check: look again.
  return settle(page, states, failures, timeoutMs);
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
