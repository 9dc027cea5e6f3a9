import { ConfigError, type Config } from "../config.js";
import type { Logger } from "../engine/logger.js";
import type { Driver } from "./driver.js";
import { DRIVERS, DriverError, enabledPlatforms, loadDrivers } from "./index.js";

/**
 * The built-in drivers and those `ACTION_SERVICE_DRIVERS` names, checked against
 * `ACTION_SERVICE_PLATFORMS`: a driver that cannot run here is a configuration error (exit 2).
 */
export async function knownDrivers(config: Config, logger: Logger, given: readonly Driver[] = []): Promise<Driver[]> {
  let known: Driver[];
  try {
    known = await loadDrivers(config.drivers, { given });
  } catch (error) {
    if (!(error instanceof DriverError)) throw error;
    throw new ConfigError(`Invalid configuration:\n  ACTION_SERVICE_DRIVERS: ${error.message.replaceAll("\n", "\n  ")}`);
  }
  let drivers: Driver[];
  try {
    ({ drivers } = enabledPlatforms(config.sandboxUrl, config.platforms, known));
  } catch (error) {
    if (!(error instanceof DriverError)) throw error;
    throw new ConfigError(`Invalid configuration:\n  ${error.message}`);
  }
  for (const driver of known) {
    if (!DRIVERS.includes(driver) && !drivers.includes(driver)) logger.warn(`the driver for "${driver.platform.name}" is loaded but not enabled: say where it lives in ACTION_SERVICE_PLATFORMS (${driver.platform.name}=https://…)`);
  }
  return known;
}
