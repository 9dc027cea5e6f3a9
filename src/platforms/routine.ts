import type { RoutineRun } from "../domain/routines.js";
import { signInSpecOf } from "./define-driver.js";
import type { ActionHandler, Driver } from "./driver.js";
import { runSteps } from "./steps/index.js";

/**
 * A routine action's handler (DESIGN §14): its saved version's steps through the shared step runner
 * on any platform, with the action's params whole (its secrets unsealed for this run, and kept out
 * of every record, snapshot and error), the commit point before its first step that may change
 * something; a step that cannot be done fails with its index and a snapshot of the page. The result
 * is what its `extract_text` steps kept and the version it ran.
 */
export function routineHandler(routine: RoutineRun, driver: Driver): ActionHandler {
  const secretParams = Object.keys(routine.params).filter((name) => routine.secretValues.includes(String(routine.params[name])));
  const signedOut = signInSpecOf(driver)?.signedOut;
  return async (context) => {
    const { extracted } = await runSteps(context, routine.steps, {
      params: routine.params,
      secretParams,
      failures: driver.failures,
      unambiguous: true,
      ...(signedOut ? { signedOut } : {}),
    });
    return { extracted: Object.fromEntries(routine.extracts.map((name) => [name, extracted[name]])), version: routine.version };
  };
}
