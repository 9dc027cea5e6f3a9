import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { DRIVER_API_VERSION } from "../platforms/api-version.js";
import { PLATFORM_NAME } from "../platforms/validate.js";
import { scaffoldFiles } from "./driver-scaffold.js";
import { PACKAGE_VERSION } from "../package.js";

/**
 * `action-service driver new <name> [--dir D]`: a code driver's package to fill in (docs/drivers.md):
 * package.json with action-service as a peer, index.js written with `action-service/driver`, a
 * README, and a test that runs `action-service driver check` against the live platform. Writes
 * nothing over an existing folder that has files in it.
 */
export function scaffoldDriver(name: string, dir: string | undefined, cwd: string = process.cwd()): { dir: string; files: string[] } {
  if (!PLATFORM_NAME.test(name)) throw new Error(`"${name}" cannot name a platform: use lower-case letters, digits, "-" or "_", starting with a letter, at most 40 (e.g. "intranet").`);
  const target = resolve(cwd, dir ?? name);
  if (existsSync(target) && readdirSync(target).length > 0) throw new Error(`${target} already has files in it: choose another --dir (nothing was written).`);
  const files = scaffoldFiles({ name, serviceVersion: PACKAGE_VERSION, apiVersion: DRIVER_API_VERSION });
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(target, path, ".."), { recursive: true });
    writeFileSync(join(target, path), content);
  }
  return { dir: relative(cwd, target) || ".", files: Object.keys(files) };
}
