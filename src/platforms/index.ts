import type { Driver } from "./driver.js";
import { ghostDriver } from "./ghost/index.js";
import { mediawikiDriver } from "./mediawiki/index.js";
import { sandboxDriver } from "./sandbox/index.js";

/** Every platform driver; a new platform is one folder and one line here. */
export const DRIVERS: readonly Driver[] = [sandboxDriver, mediawikiDriver, ghostDriver];

/**
 * The drivers a process runs and where each platform lives: the sandbox always, the others when
 * `ACTION_SERVICE_PLATFORMS` names them (DESIGN §14). A name no driver has is a configuration error.
 */
export function enabledPlatforms(
  sandboxUrl: string,
  configured: Readonly<Record<string, string>>,
  known: readonly Driver[] = DRIVERS,
): { drivers: Driver[]; baseUrls: Record<string, string> } {
  const unknown = Object.keys(configured).filter((name) => !known.some((driver) => driver.platform.name === name));
  if (unknown.length > 0) {
    throw new Error(`ACTION_SERVICE_PLATFORMS names ${unknown.map((name) => `"${name}"`).join(", ")}, which no driver has; known: ${known.map((driver) => driver.platform.name).join(", ")}.`);
  }
  const baseUrls: Record<string, string> = { ...configured, sandbox: configured.sandbox ?? sandboxUrl };
  return { drivers: known.filter((driver) => baseUrls[driver.platform.name] !== undefined), baseUrls };
}
