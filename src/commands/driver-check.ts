import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import type { Config } from "../config.js";
import { connectEndpoint } from "../browser/endpoints.js";
import type { Driver } from "../platforms/driver.js";
import { DRIVERS } from "../platforms/index.js";
import { inspectDriver } from "./driver-check/inspect.js";
import { makeReport, renderReport } from "./driver-check/report.js";
import { processTerminal, type Terminal } from "./driver-check/terminal.js";

/** A mistake in how the command was called (exit 2), as opposed to a check that found something missing (exit 1). */
export class DriverCheckUsageError extends Error {
  override name = "DriverCheckUsageError";
}

export interface DriverCheckEnvironment {
  /** `ACTION_SERVICE_CHECK_PASSWORD`: the password, so that it is never an argument. */
  password: string | undefined;
  cwd: string;
  terminal?: Terminal;
}

/**
 * `action-service driver check <driver> --url URL [--username U] [--json]` (DESIGN §14): loads the
 * driver, visits the platform with this machine's Chromium, and reports which of its declared page
 * states and failure detectors it found; with `--username` it signs in through the driver's own
 * sign-in. Returns the exit code: 0 when everything expected was found, 1 otherwise.
 */
export async function runDriverCheck(args: string[], config: Config, environment: DriverCheckEnvironment): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { url: { type: "string" }, username: { type: "string" }, json: { type: "boolean", default: false }, password: { type: "string" } },
  });
  if (values.password !== undefined) throw new DriverCheckUsageError("The password is never an argument (it would stay in the shell's history and the process list): set ACTION_SERVICE_CHECK_PASSWORD, or type it at the prompt.");
  if (positionals.length !== 1) throw new DriverCheckUsageError("driver check takes one driver: a built-in platform name, a module path, an installed package or a *.platform.json file.");
  const spec = positionals[0]!;
  const baseUrl = platformUrl(values.url);
  const terminal = environment.terminal ?? processTerminal();
  try {
    // Asked for before the browser starts: a missing password is said at once.
    const username = values.username?.trim();
    const password = username ? await passwordFor(username, environment, terminal) : undefined;
    const driver = await resolveDriver(spec, environment.cwd);
    const browser = await connectEndpoint({ kind: "local", url: "local", executablePath: config.browserExecutablePath }).catch((error: unknown) => {
      throw new Error(`No browser could be started for the check: ${error instanceof Error ? error.message : String(error)}`);
    });
    // Never aborted: Ctrl-C ends the process, and Playwright closes the browser with it.
    const controller = new AbortController();
    try {
      const context = await browser.newContext();
      const page = await context.newPage();
      if (!values.json) console.log(`Checking ${spec} (${driver.platform.title}) at ${baseUrl}${username ? `, signing in as ${username}` : ""}…`);
      const checks = await inspectDriver({
        driver,
        baseUrl,
        page,
        pageTimeoutMs: config.pageTimeoutSeconds * 1000,
        challengeTimeoutMs: config.challengeTtlSeconds * 1000,
        credentials: username && password !== undefined ? { username, password } : undefined,
        terminal,
        signal: controller.signal,
      });
      const report = makeReport(spec, driver.platform.name, baseUrl, checks);
      console.log(values.json ? JSON.stringify(report, null, 2) : renderReport(report));
      return report.ok ? 0 : 1;
    } finally {
      await browser.close().catch(() => undefined);
    }
  } finally {
    terminal.close();
  }
}

/** `--url`: the platform's origin (and base path), http or https. */
function platformUrl(given: string | undefined): string {
  if (!given) throw new DriverCheckUsageError("driver check needs --url, where the platform lives (e.g. --url https://wiki.example.com).");
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new DriverCheckUsageError(`--url "${given}" is not a URL: give the platform's address, e.g. --url https://wiki.example.com.`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new DriverCheckUsageError(`--url "${given}" is not an http or https address.`);
  return `${url.origin}${url.pathname}`.replace(/\/+$/, "");
}

/** The password from ACTION_SERVICE_CHECK_PASSWORD, or typed (not echoed) at a terminal. */
async function passwordFor(username: string, environment: DriverCheckEnvironment, terminal: Terminal): Promise<string> {
  if (environment.password) return environment.password;
  const typed = await terminal.secret(`Password for ${username} (not shown): `);
  if (typed === undefined) {
    throw new DriverCheckUsageError(`--username ${username} needs a password: set ACTION_SERVICE_CHECK_PASSWORD, or run the check on a terminal to type it (it is never an argument).`);
  }
  return typed;
}

/**
 * The driver `spec` names: a built-in platform, a module (a path, or an installed package) whose
 * default export or `driver` export is a driver, or a declared `*.platform.json` file.
 *
 * MERGE (issue 42): keep the built-in lookup and replace the rest with piece A's
 * `loadDriver(spec, cwd)` (src/platforms/load.ts), which also reads `*.platform.json` through piece
 * B's `loadPlatformFile`: the check then loads a driver exactly as start-up does. Its errors are
 * usage errors here (exit 2, naming the driver).
 */
export async function resolveDriver(spec: string, cwd: string): Promise<Driver> {
  const builtIn = DRIVERS.find((driver) => driver.platform.name === spec);
  if (builtIn) return builtIn;
  if (spec.endsWith(".platform.json")) {
    // MERGE: loadPlatformFile(resolve(cwd, spec)) from piece B.
    throw new DriverCheckUsageError(`${spec}: declared platform files are not implemented in this build yet.`);
  }
  const isPath = spec.startsWith(".") || spec.startsWith("/") || /\.[cm]?[jt]s$/.test(spec);
  let url: string;
  if (isPath) {
    const file = resolve(cwd, spec);
    if (!existsSync(file)) throw new DriverCheckUsageError(`Driver ${spec}: no such file (${file}).`);
    url = pathToFileURL(file).href;
  } else {
    try {
      url = pathToFileURL(createRequire(join(cwd, "package.json")).resolve(spec)).href;
    } catch {
      throw new DriverCheckUsageError(`Driver "${spec}" is neither a built-in platform (${DRIVERS.map((driver) => driver.platform.name).join(", ")}), a file, nor a package installed in ${cwd}.`);
    }
  }
  let module: Record<string, unknown>;
  try {
    module = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new DriverCheckUsageError(`Driver ${spec} failed to load: ${error instanceof Error ? error.message : String(error)}`);
  }
  const driver = module.default ?? module.driver;
  if (!isDriver(driver)) throw new DriverCheckUsageError(`Driver ${spec} exports no driver: export it as the default export (or as \`driver\`), made with defineDriver.`);
  return driver;
}

function isDriver(value: unknown): value is Driver {
  const driver = value as Partial<Driver> | undefined;
  return (
    typeof driver === "object" &&
    driver !== null &&
    typeof driver.platform?.name === "string" &&
    typeof driver.ensureSignedIn === "function" &&
    typeof driver.signedInAs === "function" &&
    Array.isArray(driver.failures) &&
    typeof driver.actions === "object"
  );
}
