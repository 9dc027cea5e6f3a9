import type { Store } from "../store/index.js";
import type { ActionExecutor, PlatformInfo } from "./executor.js";
import type { Lifecycle } from "./lifecycle.js";
import type { Logger } from "./logger.js";
import type { Runner } from "./runner.js";

/** What the engine's parts share. */
export interface EngineCore {
  store: Store;
  lifecycle: Lifecycle;
  runner: Runner;
  executor: ActionExecutor;
  platforms: readonly PlatformInfo[];
  publicUrl: string;
  /** Where the other coordinators reach this one (DESIGN §11). */
  internalUrl: string;
  logger: Logger;
  freeCredits: number;
}
