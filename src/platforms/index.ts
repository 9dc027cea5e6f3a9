import type { Driver } from "./driver.js";
import { ghostDriver } from "./ghost/index.js";
import { loadDriver } from "./load.js";
import { mediawikiDriver } from "./mediawiki/index.js";
import { sandboxDriver } from "./sandbox/index.js";
import { DriverError, refuseRepeatedNames, validateDriver } from "./validate.js";

export { DriverError } from "./validate.js";

/** Where a built-in driver comes from, in messages (`driver sandbox (built in) …`). */
const builtIn = (driver: Driver): string => `${driver.platform.name} (built in)`;

/** The drivers that ship with the service, checked as every loaded one is (`validateDriver`). */
export const DRIVERS: readonly Driver[] = [sandboxDriver, mediawikiDriver, ghostDriver].map((driver) => validateDriver(driver, builtIn(driver)));

/**
 * Every driver this process knows: the built-in ones, then those `ACTION_SERVICE_DRIVERS` names
 * (DESIGN §14), in order. One that fails to load, declares something invalid, was written for
 * another driver API or takes a name already taken stops here (a DriverError naming it).
 */
export async function loadDrivers(entries: readonly string[], options: { cwd?: string; given?: readonly Driver[] } = {}): Promise<Driver[]> {
  const { cwd = process.cwd(), given = [] } = options;
  const drivers: [string, Driver][] = DRIVERS.map((driver) => [builtIn(driver), driver]);
  for (const entry of entries) drivers.push([entry, await loadDriver(entry, cwd)]);
  // Drivers handed over in-process (a test's), checked as any other.
  for (const driver of given) drivers.push([`${String(driver.platform?.name)} (given)`, validateDriver(driver, `${String(driver.platform?.name)} (given)`)]);
  refuseRepeatedNames(drivers);
  return drivers.map(([, driver]) => driver);
}

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
    throw new DriverError(`ACTION_SERVICE_PLATFORMS names ${unknown.map((name) => `"${name}"`).join(", ")}, which no driver has; known: ${known.map((driver) => driver.platform.name).join(", ")}.`);
  }
  const baseUrls: Record<string, string> = { ...configured, sandbox: configured.sandbox ?? sandboxUrl };
  return { drivers: known.filter((driver) => baseUrls[driver.platform.name] !== undefined), baseUrls };
}
