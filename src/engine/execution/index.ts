/**
 * Execution (DESIGN §3, §11): the lifecycle's status changes, the runner that claims queued actions
 * under a fenced lease and runs them through the executor, recovery of what dead runners left, and
 * the status changes other processes make.
 */
export { Lifecycle, type ChangeOrigin, type Guard, type Outcome } from "./lifecycle.js";
export { Runner, type RunnerOptions } from "./runner.js";
export { Pacing, type PaceHold } from "./pacing.js";
export { ChangesElsewhere } from "./changes-elsewhere.js";
export { Follows, type Interest } from "./follows.js";
export { INTERRUPTED_AFTER_COMMIT } from "./recovery.js";
export { paramsSchema, platformReference, type ActionExecutor, type ChallengeRequest, type ExecutionContext, type PlatformInfo } from "./executor.js";
