import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { startSandboxProcess, startServeProcess, type CliProcess } from "../chaos/kill-support.js";
import { freshDatabase, templateDatabaseUrl } from "../helpers/database.js";
import { freePort } from "../helpers/processes.js";

export type Coordinator = CliProcess & { firstKey: string | undefined };

/**
 * Coordinators on one fresh PostgreSQL database: `start(n)` is a `serve` with its own data dir (its
 * own machine), `env` added to its environment alone (e.g. a clock set off by libfaketime).
 */
export interface Database {
  url: string;
  start(n: number, env?: Record<string, string>): Promise<Coordinator>;
}

/**
 * For one test file: a sandbox in its own process (started before the tests), coordinators on
 * fresh databases, and everything killed and removed after them (a stopped one let go first).
 */
export function coordinatorsOnPostgres(name: string): { readonly sandbox: CliProcess; database(env?: Record<string, string> | ((url: string) => Record<string, string>)): Promise<Database> } {
  let dir: string;
  let sandbox: CliProcess | undefined;
  const running: CliProcess[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `action-service-${name}-`));
    sandbox = await startSandboxProcess(join(dir, "sandbox.log"));
  });
  afterAll(async () => {
    for (const proc of [...running, sandbox]) {
      if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) continue;
      proc.child.kill("SIGCONT");
      proc.child.kill("SIGKILL");
      await proc.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    get sandbox() {
      return sandbox!;
    },
    async database(env = {}) {
      const url = await freshDatabase(templateDatabaseUrl());
      // `env` may be made from the database's URL (e.g. to reach it through PgBouncer).
      const shared = { ACTION_SERVICE_DATABASE_URL: url, ACTION_SERVICE_MASTER_KEY: randomBytes(32).toString("hex"), ...(typeof env === "function" ? env(url) : env) };
      return {
        url,
        async start(n, own = {}) {
          const proc = await startServeProcess({ dataDir: join(dir, `data-${n}`), port: await freePort(), sandboxUrl: sandbox!.url, logFile: join(dir, `serve-${n}.log`), env: { ...shared, ...own } });
          running.push(proc);
          return proc;
        },
      };
    },
  };
}
