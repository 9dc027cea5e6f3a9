import { existsSync, readFileSync, statSync } from "node:fs";
import { register } from "node:module";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Driver } from "./driver.js";
import { DriverError, validateDriver } from "./validate.js";

/**
 * Drivers from outside the source tree (`ACTION_SERVICE_DRIVERS`, DESIGN §14): a module path
 * (relative to the working directory; a folder is a package), an installed package name, or a
 * platform file (`*.platform.json`). Each passes the same check as the built-in drivers.
 */
export async function loadDriver(entry: string, cwd: string): Promise<Driver> {
  if (entry.endsWith(".platform.json")) return validateDriver(await loadDeclaredDriver(resolve(cwd, entry), entry), entry);
  const url = moduleUrl(entry, cwd);
  resolveDriverApiToThisService();
  let module: Record<string, unknown>;
  try {
    module = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new DriverError(`driver ${entry} could not be loaded: ${error instanceof Error ? error.message : String(error)}`);
  }
  return validateDriver(module.default ?? module.driver, entry);
}

/** A platform file, read by the declared drivers' interpreter; what is wrong with it stops start-up like any driver's problem. */
async function loadDeclaredDriver(path: string, entry: string): Promise<Driver> {
  const { loadPlatformFile, PlatformFileError } = await import("./declared/index.js");
  try {
    return await loadPlatformFile(path);
  } catch (error) {
    if (error instanceof PlatformFileError) throw new DriverError(`driver ${entry} declares something invalid:\n${error.message}`);
    throw error;
  }
}

/** The module an entry names: a path that exists (a file, or a package's folder), else an installed package. */
function moduleUrl(entry: string, cwd: string): string {
  const path = resolve(cwd, entry);
  if (entry.startsWith(".") || isAbsolute(entry) || existsSync(path)) {
    if (!existsSync(path)) throw new DriverError(`driver ${entry} could not be loaded: there is no ${path}`);
    return pathToFileURL(statSync(path).isDirectory() ? packageEntry(path, entry) : path).href;
  }
  const folder = installedPackage(entry, cwd);
  if (!folder) throw new DriverError(`driver ${entry} could not be loaded: no such file in ${cwd}, and no installed package of that name (npm install it, or give its path)`);
  return pathToFileURL(packageEntry(folder, entry)).href;
}

/** `node_modules/<name>` in the working directory or above it, else beside this service's own install (a global one). */
function installedPackage(name: string, cwd: string): string | undefined {
  for (const start of [cwd, dirname(fileURLToPath(import.meta.url))]) {
    for (let dir = start; ; dir = dirname(dir)) {
      const candidate = join(dir, "node_modules", name);
      if (existsSync(join(candidate, "package.json"))) return candidate;
      if (dirname(dir) === dir) break;
    }
  }
  return undefined;
}

/** A package folder's entry module: its `exports` (the import condition), else `main`, else index.js. */
function packageEntry(folder: string, entry: string): string {
  const manifest = join(folder, "package.json");
  let declared: { exports?: unknown; main?: unknown } = {};
  if (existsSync(manifest)) {
    try {
      declared = JSON.parse(readFileSync(manifest, "utf8")) as typeof declared;
    } catch (error) {
      throw new DriverError(`driver ${entry} could not be loaded: ${manifest} is not JSON (${(error as Error).message})`);
    }
  }
  const exported = declared.exports;
  const root = typeof exported === "object" && exported !== null && "." in exported ? (exported as Record<string, unknown>)["."] : exported;
  const target = conditionalTarget(root) ?? (typeof declared.main === "string" ? declared.main : "index.js");
  const file = resolve(folder, target);
  if (!existsSync(file)) throw new DriverError(`driver ${entry} could not be loaded: its entry module ${file} does not exist`);
  return file;
}

function conditionalTarget(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value !== "object" || value === null) return undefined;
  for (const condition of ["import", "node", "default"]) {
    const target = conditionalTarget((value as Record<string, unknown>)[condition]);
    if (target) return target;
  }
  return undefined;
}

/**
 * A driver imports `action-service/driver`; it gets this service's own, whatever is installed beside
 * the driver (npm installs a peer dependency as a second copy, whose `ActionFailure` the engine would
 * not know). One resolve hook for the process, registered with the first driver loaded from outside.
 */
let hooked = false;
function resolveDriverApiToThisService(): void {
  if (hooked) return;
  hooked = true;
  // From the sources (the test runner) this is src/platforms/load.ts; built, a chunk of dist/ beside the entry (scripts/bundle.mjs).
  const api = new URL(import.meta.url.endsWith(".ts") ? "../driver-api.ts" : "./driver-api.js", import.meta.url).href;
  register(`data:text/javascript,${encodeURIComponent(RESOLVE_HOOK)}`, { data: { api } });
}

const RESOLVE_HOOK = `
let api;
export function initialize(data) { api = data.api; }
export async function resolve(specifier, context, next) {
  return specifier === "action-service/driver" ? { url: api, shortCircuit: true } : next(specifier, context);
}`;
