#!/usr/bin/env node
import { parseArgs } from "node:util";
import { ConfigError, loadConfig, type Config } from "./config.js";
import { KEY_ROLES, type KeyRole } from "./domain/keys.js";
import { createLogger } from "./engine/logger.js";

const USAGE = `Usage: action-service <command>

  serve [--sandbox]        REST API, MCP over HTTP (/mcp) and live links (+ the sandbox platform)
  mcp                      MCP over stdio, for Claude Desktop and local agents
  sandbox                  the sandbox platform alone
  demo                     a narrated end-to-end run against the sandbox
  browser-server [--port N] [--host H]
                           a Playwright browser server on this machine's Chromium (for BROWSER_WS_ENDPOINTS)
  keys create [--role admin|operator|read_only] [--accounts ID,…] [--workspace NAME]
                           prints a new API key once
  keys list [--workspace NAME]
                           every key: id, prefix, role, workspace, created, active or revoked
  keys revoke ID           refuses the key from now on, on every surface and process
  migrate                  applies pending database migrations (serve and the CLI also do, one process at a time)
  driver new NAME [--dir D]
                           scaffolds a code driver's package for a new platform (docs/drivers.md)
  driver check <driver> --url URL [--username U] [--json]
                           which of a driver's page states and failure detectors the live platform shows (docs/driver-check.md)
  driver schema            prints the JSON Schema of platform files (docs/platform-files.md)
  x402-devnet [--port N] [--host H]
                           a local chain, test USDC and x402 facilitator; prints their configuration

Configuration is read from the environment (see README: ACTION_SERVICE_*, BROWSER_*, SANDBOX_*).`;

function config(): Config {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
}

/** Stops cleanly on Ctrl-C or a termination signal. */
function onShutdown(close: () => Promise<void>): void {
  let closing = false;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (closing) process.exit(1);
      closing = true;
      close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
}

async function serve(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { sandbox: { type: "boolean", default: false } } });
  const settings = config();
  const logger = createLogger(settings.logLevel);
  const { startServer } = await import("./server.js");
  const server = await startServer(settings, { logger, sandbox: values.sandbox });
  onShutdown(() => server.close());
  console.log(`action-service listening on ${server.url} (web app /app, REST /v1, MCP /mcp, OpenAPI /v1/openapi.json)`);
  if (server.sandbox) console.log(`sandbox platform on ${server.sandbox.url}`);
  if (server.service.firstKey) {
    console.log("First start: created a workspace and its admin API key. It is shown only this once; keep it safe:");
    console.log(server.service.firstKey.key);
  }
}

/** `keys create | list | revoke`: on the data dir's store, without starting a runner. */
async function keys(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub !== "create" && sub !== "list" && sub !== "revoke") throw new UsageError(`Unknown keys command "${sub ?? ""}".`);
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: sub === "revoke",
    options: sub === "create" ? { role: { type: "string", default: "admin" }, accounts: { type: "string" }, workspace: { type: "string" } } : sub === "list" ? { workspace: { type: "string" } } : {},
  });
  if (sub === "create" && !KEY_ROLES.includes(values.role as KeyRole)) throw new UsageError(`--role must be one of ${KEY_ROLES.join(", ")}.`);
  if (sub === "revoke" && positionals.length !== 1) throw new UsageError("keys revoke takes one key id (see `keys list`).");
  const settings = config();
  const { createService } = await import("./main.js");
  const { silentLogger } = await import("./engine/logger.js");
  const { enabledPlatforms } = await import("./platforms/index.js");
  const { knownDrivers } = await import("./platforms/known.js");
  const known = await knownDrivers(settings, silentLogger);
  const service = await createService(settings, {
    executor: { execute: () => Promise.reject(new Error(`keys ${sub} runs no action`)) },
    platforms: enabledPlatforms(settings.sandboxUrl, settings.platforms, known).drivers.map((driver) => driver.platform),
    logger: silentLogger,
    start: false,
  });
  try {
    const { engine } = service;
    if (sub === "create") {
      const accountIds = (values.accounts as string | undefined)?.split(",").map((id) => id.trim()).filter(Boolean);
      const issued = await engine.keys.issue({ role: values.role as KeyRole, accountIds, workspaceName: values.workspace as string | undefined });
      console.log(`Created ${issued.role === "read_only" ? "a" : "an"} ${issued.role} key for workspace "${issued.workspace.name}"${accountIds ? ` limited to ${accountIds.join(", ")}` : ""}. It is shown only this once:`);
      console.log(issued.key);
    } else if (sub === "list") {
      const listed = await engine.keys.list(values.workspace as string | undefined);
      if (listed.length === 0) console.log("No keys yet: `action-service keys create` makes one.");
      for (const key of listed) {
        const accounts = key.account_ids ? ` accounts ${key.account_ids.join(",")}` : "";
        const state = key.revoked_at ? `revoked ${key.revoked_at}` : "active";
        console.log(`${key.id}  ${key.prefix}…  ${key.role.padEnd(9)}  workspace "${key.workspace_name}"  created ${key.created_at}  ${state}${accounts}`);
      }
    } else {
      const { key, revoked } = await engine.keys.revoke(positionals[0]!);
      console.log(
        revoked
          ? `Revoked ${key.id} (${key.prefix}…, ${key.role}, workspace "${key.workspace_name}"): every request with it is now refused (401).`
          : `${key.id} (${key.prefix}…) was already revoked at ${key.revoked_at}.`,
      );
    }
  } finally {
    await service.store.close();
  }
}

/** `migrate`: opens the configured database, which applies what is pending, and says where it stands. */
async function migrate(): Promise<void> {
  const settings = config();
  const { openConfiguredStore } = await import("./main.js");
  const store = await openConfiguredStore(settings);
  try {
    const version = await store.schemaVersion();
    console.log(`${store.dialect === "postgres" ? "PostgreSQL" : `SQLite (${settings.dataDir})`}: migrations applied, schema version ${version}.`);
  } finally {
    await store.close();
  }
}

class UsageError extends Error {}

/** `driver <sub>`: the commands for writing a platform's driver, one handler each. */
const DRIVER_COMMANDS: Record<string, (args: string[]) => Promise<void>> = {
  new: driverNew,
  check: driverCheck,
  schema: driverSchema,
};

async function driver(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const run = sub === undefined ? undefined : DRIVER_COMMANDS[sub];
  if (!run) throw new UsageError(`Unknown driver command "${sub ?? ""}": ${Object.keys(DRIVER_COMMANDS).join(", ")}.`);
  return run(rest);
}

/** `driver check`: which of a driver's page states the live platform shows; exits non-zero naming what it did not. */
async function driverCheck(args: string[]): Promise<void> {
  const { runDriverCheck } = await import("./commands/driver-check.js");
  process.exitCode = await runDriverCheck(args, config(), { password: process.env.ACTION_SERVICE_CHECK_PASSWORD, cwd: process.cwd() });
}

/** `driver schema`: the platform file's JSON Schema (as shipped in platform.schema.json), for editors. */
async function driverSchema(args: string[]): Promise<void> {
  if (args.length > 0) throw new UsageError("driver schema takes no arguments.");
  const { platformJsonSchema } = await import("./platforms/declared/schema.js");
  console.log(JSON.stringify(platformJsonSchema(), null, 2));
}

/** `driver new NAME [--dir D]`: writes a code driver's package to fill in. */
async function driverNew(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { dir: { type: "string" } } });
  if (positionals.length !== 1) throw new UsageError("driver new takes the platform's name, e.g. `driver new intranet`.");
  const { scaffoldDriver } = await import("./commands/driver-new.js");
  let made: { dir: string; files: string[] };
  try {
    made = scaffoldDriver(positionals[0]!, values.dir);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  console.log(`Wrote a driver for "${positionals[0]}" in ${made.dir}: ${made.files.join(", ")}.`);
  console.log(`Next: fill in index.js, check it with \`PLATFORM_URL=https://… npm test\` there, and load it with ACTION_SERVICE_DRIVERS=${made.dir}.`);
}

/** `[--port N] [--host H]`: a free port (0) on loopback unless told otherwise. */
function portAndHost(args: string[]): { port: number; host: string } {
  const { values } = parseArgs({ args, options: { port: { type: "string", default: "0" }, host: { type: "string", default: "127.0.0.1" } } });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new UsageError("--port must be a port number.");
  return { port, host: values.host };
}

async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  switch (command) {
    case "serve":
      return serve(args);
    case "mcp":
      return (await import("./commands/mcp.js")).runMcp(config());
    case "sandbox": {
      const settings = config();
      const { readDkimKey, startSandbox } = await import("./sandbox/index.js");
      const { keyPath, selector } = settings.sandboxDkim;
      const sandbox = await startSandbox({
        port: settings.sandboxPort,
        reachedAt: settings.sandboxUrlGiven ? settings.sandboxUrl : undefined,
        smtpUrl: settings.sandboxSmtpUrl,
        dkim: keyPath ? readDkimKey(keyPath, selector) : undefined,
        onDeliveryFailure: (error, channel) => console.error(`sandbox: a sign-in ${channel === "email" ? "mail" : "text"} was not delivered: ${error instanceof Error ? error.message : String(error)}`),
      });
      onShutdown(() => sandbox.close());
      console.log(`sandbox platform on ${sandbox.url}`);
      return;
    }
    case "browser-server": {
      const server = await (await import("./commands/browser-server.js")).runBrowserServer(config(), portAndHost(args));
      onShutdown(() => server.close());
      return;
    }
    case "x402-devnet": {
      const devnet = await (await import("./commands/x402-devnet.js")).runX402Devnet(portAndHost(args));
      onShutdown(() => devnet.close());
      return;
    }
    case "demo":
      return (await import("./commands/demo.js")).runDemo(config());
    case "keys":
      return keys(args);
    case "migrate":
      return migrate();
    case "driver":
      return driver(args);
    case undefined:
    case "help":
    case "--help":
    case "-h":
      console.log(USAGE);
      return;
    default:
      throw new UsageError(`Unknown command "${command}".`);
  }
}

// Every promise the service makes is handled where it is made (DESIGN §11); one that slips
// through is a bug to log, not a reason to drop every running action and waiting challenge.
process.on("unhandledRejection", (reason) => {
  console.error(`action-service: unhandled rejection (a bug; the service keeps running): ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`);
});

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError || (error instanceof Error && error.name === "DriverCheckUsageError") || (error instanceof Error && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS"))) {
    console.error(`${error.message}\n\n${USAGE}`);
    process.exit(2);
  }
  console.error(error instanceof Error ? error.message : error);
  process.exit(error instanceof ConfigError ? 2 : 1);
});
