import { parseArgs } from "node:util";
import type { Config } from "../config.js";
import { connectEndpoint } from "../browser/endpoints.js";
import type { Driver } from "../platforms/driver.js";
import { loadDrivers } from "../platforms/index.js";
import { loadDriver } from "../platforms/load.js";
import { DriverError } from "../platforms/validate.js";
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
    const driver = await resolveDriver(spec, config, environment.cwd);
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
 * The driver `spec` names, loaded as start-up loads drivers (src/platforms/load.ts, the same
 * checks): a built-in platform or one `ACTION_SERVICE_DRIVERS` loads, by its name; else a module
 * (a path, a package's folder, an installed package) or a `*.platform.json` file. What stops it
 * loading is a mistake in the command (exit 2), naming the driver.
 */
export async function resolveDriver(spec: string, config: Config, cwd: string): Promise<Driver> {
  try {
    const known = await loadDrivers(config.drivers, { cwd });
    return known.find((driver) => driver.platform.name === spec) ?? (await loadDriver(spec, cwd));
  } catch (error) {
    if (error instanceof DriverError) throw new DriverCheckUsageError(error.message);
    throw error;
  }
}
