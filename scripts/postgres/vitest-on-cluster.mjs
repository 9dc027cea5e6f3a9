/**
 * What `npm run test:postgres` and `npm run test:faults` share: install the PostgreSQL server when
 * it is missing (and whatever else `prepare` installs), build dist/ when it is missing, start a
 * throw-away cluster, migrate a template database `action_service_template` with the product's own
 * `PostgresAdapter`, and run vitest with `config` and `ACTION_SERVICE_TEST_DATABASE_URL` naming that
 * template (test/helpers/database.ts copies it for every store a test opens). The cluster is
 * deleted at the end, whatever the outcome, and on SIGINT/SIGTERM; the process exits with vitest's
 * status.
 */
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { commands } from "../commands.mjs";
import { createDatabase, installPostgres, startCluster } from "./cluster.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const TEMPLATE = "action_service_template";
const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 };

/** `name` prefixes the log lines; `prepare({ run, log })` installs what else the suite needs. */
export async function runVitestOnCluster({ name, config, prepare = () => undefined }) {
  const log = (message) => console.log(`[${name}] ${message}`);
  const { run } = commands(log);
  let cluster;
  let child;
  let stopping = false;

  async function finish(status) {
    if (stopping) return;
    stopping = true;
    try {
      await cluster?.stop();
    } catch (error) {
      console.error(`[${name}] could not stop the cluster: ${error instanceof Error ? error.message : error}`);
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

  try {
    installPostgres();
    prepare({ run, log });
    const cli = join(root, "dist", "cli.js");
    if (!existsSync(cli)) {
      log("dist/ is missing: npm run build");
      run("npm", ["run", "build"], { cwd: root });
    }
    cluster = await startCluster();
    const templateUrl = await createDatabase(cluster.url, TEMPLATE);
    // Migrated as an operator does, by the built CLI (a data dir of its own, a key nothing sealed with).
    const dataDir = mkdtempSync(join(tmpdir(), "action-service-migrate-"));
    try {
      execFileSync(process.execPath, [cli, "migrate"], {
        env: { ...process.env, ACTION_SERVICE_DATABASE_URL: templateUrl, ACTION_SERVICE_MASTER_KEY: randomBytes(32).toString("hex"), ACTION_SERVICE_DATA_DIR: dataDir },
        stdio: ["ignore", "ignore", "inherit"],
      });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
    log(`${TEMPLATE}: migrated`);

    const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
    child = spawn(process.execPath, [vitest, "run", "-c", config, ...process.argv.slice(2)], {
      cwd: root,
      stdio: "inherit",
      env: { ...process.env, ACTION_SERVICE_TEST_DATABASE_URL: templateUrl },
    });
    const status = await new Promise((resolve) => {
      child.on("error", (error) => {
        console.error(`[${name}] vitest did not start: ${error.message}`);
        resolve(1);
      });
      child.on("exit", (code, signal) => resolve(code ?? SIGNAL_EXIT[signal] ?? 1));
    });
    await finish(status);
  } catch (error) {
    console.error(`[${name}] ${error instanceof Error ? error.message : error}`);
    await finish(1);
  }
}
