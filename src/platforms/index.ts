import type { Driver } from "./driver.js";
import { sandboxDriver } from "./sandbox/index.js";

/** Every platform driver; a new platform is one folder and one line here. */
export const DRIVERS: readonly Driver[] = [sandboxDriver];
