import type { Locator, Page } from "playwright";
import type { ActionParams } from "../../domain/actions.js";
import type { ActionHandler, FailureDetector } from "../driver.js";
import { runSteps } from "./run.js";

/**
 * The service's own `browser_steps` for a platform (every driver made by `defineDriver` has it; a
 * driver may bring its own): the steps in the signed-in page, each one's element recorded (what
 * `save_routine` saves a step from), the page's snapshot where a `snapshot` step (or a dry run)
 * asks, and, when the account is signed out during the steps, `signed_out`.
 */
export function browserStepsHandler(driver: { failures: readonly FailureDetector[]; signedOut?: (page: Page) => Locator }): ActionHandler {
  return async (context) => {
    const { steps, dry_run: dryRun } = context.params as ActionParams<"browser_steps">;
    const run = await runSteps(context, steps, {
      failures: driver.failures,
      record: true,
      ...(dryRun ? { dryRun: true } : {}),
      ...(driver.signedOut ? { signedOut: driver.signedOut } : {}),
    });
    return { extracted: run.extracted, steps: run.steps, ...(run.snapshots.length > 0 ? { snapshots: run.snapshots } : {}) };
  };
}
