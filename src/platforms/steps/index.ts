/*
 * The step runner (DESIGN §6, §14): one runner for `browser_steps`, a platform file's recipes and
 * routines, over the step vocabulary of src/domain/steps.ts.
 */
export { browserStepsHandler } from "./browser-steps.js";
export { pathOf, stepFailure } from "./failure.js";
export { compileLocator, type FindOn, type Root } from "./locators.js";
export { resolveTarget, type ResolvedTarget, type StepRecord } from "./record.js";
export { runSteps, type PageSnapshot, type RunOptions, type StepsResult } from "./run.js";
export { bounded, redactor, REDACTED, SNAPSHOT_MAX_BYTES, snapshotOf, withoutFieldValues } from "./snapshot.js";
export { fillTemplate, hasAll, placeholdersOf, type Params } from "./templates.js";
