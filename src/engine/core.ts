import type { Store } from "../store/index.js";
import type { ActionExecutor, PlatformInfo, Lifecycle, Runner } from "./execution/index.js";
import type { Logger } from "./logger.js";

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
