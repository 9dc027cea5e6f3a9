import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { CLI, restClient, startServe, type ServeProcess } from "../../helpers/processes.js";
import { eventually } from "../../helpers/wait.js";

/** A real `serve` process whose platform under test is one a driver from outside the source tree adds, with what a test asks of it through REST. */
export interface PlatformService {
  service: ServeProcess;
  api: ReturnType<typeof restClient>;
  /** Adds an account on the platform; its id. */
  addAccount(username: string, password: string): Promise<string>;
  /** Runs an action through REST and waits until it ends or pauses. */
  run(accountId: string, type: string, params?: Record<string, unknown>): Promise<any>;
  /** Runs an action that must succeed; the action. */
  succeeded(accountId: string, type: string, params?: Record<string, unknown>): Promise<any>;
  /** Runs an action that must fail; its error. */
  failed(accountId: string, type: string, params?: Record<string, unknown>): Promise<{ code: string; message: string }>;
  stop(): Promise<void>;
}

/**
 * Starts `serve` (dist/cli.js: `npm run build` first) with `ACTION_SERVICE_DRIVERS=drivers` and
 * `platform` at `url`. No sandbox runs: the platform at `url` is the one under test.
 */
export async function servePlatform(options: { drivers: string; platform: string; url: string }): Promise<PlatformService> {
  const dataDir = mkdtempSync(join(tmpdir(), `action-service-${options.platform}-`));
  let service: ServeProcess;
  try {
    service = await startServe({
      dataDir,
      sandboxUrl: "http://127.0.0.1:9",
      env: { ACTION_SERVICE_DRIVERS: options.drivers, ACTION_SERVICE_PLATFORMS: `${options.platform}=${options.url}` },
    });
  } catch (error) {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const api = restClient(() => service.url, service.firstKey!);
  const run = async (accountId: string, type: string, params: Record<string, unknown> = {}): Promise<any> => {
    const created = await api("POST", "/v1/actions", { account_id: accountId, type, params });
    expect(created.status, JSON.stringify(created.json)).toBeLessThan(300);
    return eventually(
      async () => {
        const action = (await api("GET", `/v1/actions/${created.json.id}?wait=10`)).json;
        return ["succeeded", "failed", "canceled", "needs_input"].includes(action.status) ? action : undefined;
      },
      { what: `the ${type} to end`, timeoutMs: 100_000, everyMs: 200 },
    );
  };
  return {
    service,
    api,
    async addAccount(username, password) {
      const created = await api("POST", "/v1/accounts", { platform: options.platform, username, password });
      expect(created.status, JSON.stringify(created.json)).toBe(201);
      return created.json.id;
    },
    run,
    async succeeded(accountId, type, params = {}) {
      const action = await run(accountId, type, params);
      expect(action.status, JSON.stringify(action.error ?? action.challenge)).toBe("succeeded");
      return action;
    },
    async failed(accountId, type, params = {}) {
      const action = await run(accountId, type, params);
      expect(action.status, JSON.stringify(action.result ?? action.challenge)).toBe("failed");
      return action.error;
    },
    async stop() {
      await service.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** What `driver check --json` prints. */
export interface CheckReport {
  ok: boolean;
  checks: { name: string; outcome: string; message: string }[];
}

/** `action-service driver check <driver> --url … --username … --json`, run in `cwd`, the password from the environment as a user gives it. */
export function driverCheck(options: { driver: string; url: string; username: string; password: string; cwd?: string }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, "driver", "check", options.driver, "--url", options.url, "--username", options.username, "--json"], {
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      env: { ...process.env, ACTION_SERVICE_CHECK_PASSWORD: options.password, ACTION_SERVICE_LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}
