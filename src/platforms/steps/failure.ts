import type { Page } from "playwright";
import { ActionFailure } from "../../domain/errors.js";
import type { DriverContext, FailureDetector } from "../driver.js";
import { snapshotOf } from "./snapshot.js";

/** The page's path, as a failure names it. */
export function pathOf(page: Page): string {
  try {
    return new URL(page.url()).pathname;
  } catch {
    return page.url();
  }
}

/**
 * What a step's error means: a failure of the platform (a detector's page, the page still arriving)
 * or of the browser stays what it is; anything else is a page that does not look as the steps say
 * (`ui_changed`). A page that does not look as expected, or shows a detector's page, carries
 * `where` (the step's index, or the result field read) with the page's path and its accessibility
 * snapshot, redacted by `redact`: what an agent needs to write the repaired step (DESIGN §6).
 */
export async function stepFailure(
  context: DriverContext,
  failures: readonly FailureDetector[],
  error: unknown,
  what: string,
  where: Record<string, unknown>,
  redact: (text: string) => string,
): Promise<unknown> {
  const { page } = context;
  if (page.isClosed()) return error;
  if (error instanceof ActionFailure && error.code !== "ui_changed") return error;
  const judged = context.judgeTimeout(error);
  if (judged && judged.code !== "ui_changed") return judged;
  if (!(error instanceof ActionFailure) && !judged && !isPageError(error)) return error;
  // A step's own ui_changed (a target grown ambiguous) keeps its words; anything else is said by `what`.
  let failure = error instanceof ActionFailure ? error : new ActionFailure("ui_changed", what);
  for (const detector of failures) {
    if (await detector.locate(page).first().isVisible().catch(() => false)) {
      failure = new ActionFailure(detector.code, detector.message);
      break;
    }
  }
  const snapshot = await snapshotOf(page, redact);
  return new ActionFailure(failure.code, failure.message, undefined, { ...where, path: pathOf(page), ...(snapshot === undefined ? {} : { snapshot }) });
}

/** An error Playwright raises for the page (not the browser): an element not found, not fillable, not visible. */
function isPageError(error: unknown): boolean {
  return error instanceof Error && !/Target (page, context or browser )?(has been )?closed|Browser has been closed/i.test(error.message);
}
