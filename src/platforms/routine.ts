import type { RoutineRun } from "../domain/routines.js";
import type { ActionHandler, FailureDetector } from "./driver.js";
import { compileLocator } from "./declared/locators.js";
import { recipeHandler } from "./declared/recipe.js";

/**
 * A routine action's handler (DESIGN §14): its saved version's steps through the shared step runner
 * on any platform, with the action's params whole (its secrets unsealed for this run), the commit
 * point before its first step that may change something; the result is what its `extract_text`
 * steps kept and the version it ran.
 */
export function routineHandler(routine: RoutineRun, failures: readonly FailureDetector[]): ActionHandler {
  const result = Object.fromEntries(routine.extracts.map((name) => [name, { extracted: name }]));
  const run = recipeHandler({ steps: routine.steps, result }, (locator) => compileLocator(locator, {}), failures);
  return async (context) => {
    const extracted = await run({ ...context, params: routine.params });
    return { extracted, version: routine.version };
  };
}
