/**
 * The driver API's version (semver). A driver says which one it was written for; a minor version
 * only adds, so a driver for 1.0.0 runs on 1.3.0, never the other way round (it may use what this
 * service lacks), and another major version is refused outright.
 */
export const DRIVER_API_VERSION = "1.0.0";

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:[-+][0-9A-Za-z.+-]*)?$/;

/** Why a driver written for `declared` cannot run on this service, or undefined when it can. */
export function apiVersionProblem(declared: unknown): string | undefined {
  const example = `apiVersion: "${DRIVER_API_VERSION}"`;
  if (declared === undefined) return `declares no driver API version: give defineDriver ${example} (the version of action-service/driver it was written for)`;
  const match = typeof declared === "string" ? SEMVER.exec(declared) : null;
  if (!match) return `declares driver API version ${JSON.stringify(declared)}, which is not a version such as "${DRIVER_API_VERSION}"`;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  const [ownMajor, ownMinor] = DRIVER_API_VERSION.split(".").map(Number) as [number, number];
  if (major !== ownMajor) return `was written for driver API ${major}.x; this service has ${DRIVER_API_VERSION}`;
  if (minor > ownMinor) return `was written for driver API ${declared}, newer than this service's ${DRIVER_API_VERSION}: upgrade action-service`;
  return undefined;
}
