#!/usr/bin/env node
/**
 * `npm run test:postgres [-- vitest args]`: the store's suites again, on PostgreSQL
 * (vitest.postgres.config.mts). Installs the server when it is missing, starts a throw-away
 * cluster (scripts/postgres/cluster.mjs), migrates a template database `action_service_template`
 * with the product's own `PostgresAdapter` (from dist/: `npm run build` first when it is missing),
 * and runs vitest with `ACTION_SERVICE_TEST_DATABASE_URL` naming that template: each store a test
 * opens is a fresh copy of it (test/helpers/database.ts). The cluster is deleted at the end,
 * whatever the outcome, and on SIGINT/SIGTERM.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createDatabase, installPostgres, startCluster } from "./cluster.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const TEMPLATE = "action_service_template";
const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 };

let cluster;
let child;
let stopping = false;

async function finish(status) {
  if (stopping) return;
  stopping = true;
  try {
    await cluster?.stop();
  } catch (error) {
    console.error(`[postgres] could not stop the cluster: ${error instanceof Error ? error.message : error}`);
  }
  process.exit(status);
}

for (const signal of Object.keys(SIGNAL_EXIT)) {
  process.on(signal, () => {
    // vitest hears it too (same terminal) or from here; the cluster goes once vitest has stopped.
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      return;
    }
    void finish(SIGNAL_EXIT[signal]);
  });
}

function build() {
  console.log("[postgres] dist/ is missing: npm run build");
  const result = spawnSync("npm", ["run", "build"], { cwd: root, stdio: "inherit" });
  if (result.status !== 0) throw new Error(`npm run build failed (exit ${result.status ?? result.signal})`);
}

try {
  installPostgres();
  const adapterFile = join(root, "dist", "store", "adapters", "postgres.js");
  if (!existsSync(adapterFile)) build();
  cluster = await startCluster();
  const templateUrl = await createDatabase(cluster.url, TEMPLATE);
  const { PostgresAdapter } = await import(pathToFileURL(adapterFile).href);
  const adapter = await PostgresAdapter.open(templateUrl);
  await adapter.close();
  console.log(`[postgres] ${TEMPLATE}: migrated`);

  const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
  child = spawn(process.execPath, [vitest, "run", "-c", "vitest.postgres.config.mts", ...process.argv.slice(2)], {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, ACTION_SERVICE_TEST_DATABASE_URL: templateUrl },
  });
  const status = await new Promise((resolve) => {
    child.on("error", (error) => {
      console.error(`[postgres] vitest did not start: ${error.message}`);
      resolve(1);
    });
    child.on("exit", (code, signal) => resolve(code ?? SIGNAL_EXIT[signal] ?? 1));
  });
  await finish(status);
} catch (error) {
  console.error(`[postgres] ${error instanceof Error ? error.message : error}`);
  await finish(1);
}
