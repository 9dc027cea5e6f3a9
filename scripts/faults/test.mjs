#!/usr/bin/env node
/**
 * `npm run test:faults [-- vitest args]`: the fault-injection suite (test/faults,
 * vitest.faults.config.mts) — three real coordinators on a real PostgreSQL, each through a TCP
 * proxy the test controls, under the faults of DESIGN §11 ("Faults a fleet meets").
 *
 * Installs what is missing — Debian's PostgreSQL server (scripts/postgres/cluster.mjs) and
 * Debian's `faketime` (libfaketime, for the coordinators whose clocks are off) by apt-get when
 * root — builds dist/ when it is missing (the coordinators are `node dist/cli.js serve`), starts a
 * throw-away cluster, migrates a template database with the product's own `PostgresAdapter`, and
 * runs vitest with `ACTION_SERVICE_TEST_DATABASE_URL` naming the template: each fleet gets a fresh
 * copy of it (the scenario that restarts PostgreSQL starts a cluster of its own, as the others'
 * fleets share this one). The cluster is deleted at the end, whatever the outcome, and on
 * SIGINT/SIGTERM.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createDatabase, installPostgres, startCluster } from "../postgres/cluster.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const TEMPLATE = "action_service_template";
const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 };
const log = (message) => console.log(`[faults] ${message}`);

let cluster;
let child;
let stopping = false;

async function finish(status) {
  if (stopping) return;
  stopping = true;
  try {
    await cluster?.stop();
  } catch (error) {
    console.error(`[faults] could not stop the cluster: ${error instanceof Error ? error.message : error}`);
  }
  process.exit(status);
}

for (const signal of Object.keys(SIGNAL_EXIT)) {
  process.on(signal, () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      return;
    }
    void finish(SIGNAL_EXIT[signal]);
  });
}

function run(command, args, options = {}) {
  log(`$ ${command} ${args.join(" ")}`);
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit", ...options });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed (exit ${result.status ?? result.signal})`);
}

/** libfaketime's preload library, where Debian's `faketime` package puts it (/usr/lib/<multiarch>/faketime/). */
function fakeTimeInstalled() {
  const candidates = ["/usr/lib/faketime", ...readdirSync("/usr/lib").map((name) => join("/usr/lib", name, "faketime"))];
  return candidates.some((dir) => existsSync(join(dir, "libfaketime.so.1")));
}

function installFakeTime() {
  if (fakeTimeInstalled()) return;
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (!isRoot || !existsSync("/usr/bin/apt-get")) {
    throw new Error("libfaketime is not installed. Install Debian's package, then run again:\n  sudo apt-get install -y faketime");
  }
  log("libfaketime is missing: installing Debian's faketime package");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  run("apt-get", ["update", "-qq"], { env });
  run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", "faketime"], { env });
  if (!fakeTimeInstalled()) throw new Error("apt-get installed faketime but no libfaketime.so.1 is under /usr/lib/*/faketime/");
}

try {
  installPostgres();
  installFakeTime();
  const adapterFile = join(root, "dist", "store", "adapters", "postgres.js");
  if (!existsSync(join(root, "dist", "cli.js")) || !existsSync(adapterFile)) {
    log("dist/ is missing: npm run build");
    run("npm", ["run", "build"]);
  }
  cluster = await startCluster();
  const templateUrl = await createDatabase(cluster.url, TEMPLATE);
  const { PostgresAdapter } = await import(pathToFileURL(adapterFile).href);
  const adapter = await PostgresAdapter.open(templateUrl);
  await adapter.close();
  log(`${TEMPLATE}: migrated`);

  const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
  child = spawn(process.execPath, [vitest, "run", "-c", "vitest.faults.config.mts", ...process.argv.slice(2)], {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, ACTION_SERVICE_TEST_DATABASE_URL: templateUrl },
  });
  const status = await new Promise((resolve) => {
    child.on("error", (error) => {
      console.error(`[faults] vitest did not start: ${error.message}`);
      resolve(1);
    });
    child.on("exit", (code, signal) => resolve(code ?? SIGNAL_EXIT[signal] ?? 1));
  });
  await finish(status);
} catch (error) {
  console.error(`[faults] ${error instanceof Error ? error.message : error}`);
  await finish(1);
}
