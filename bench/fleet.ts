/**
 * A fleet for the benchmarks, driven only from outside, as an operator runs one: `node dist/cli.js
 * serve` processes (build first) on one store — a PostgreSQL database, or one data dir's SQLite
 * file that several `serve`s share (README, "Several processes may share one data dir") — each on
 * its own port, with its own Chromium or all on one `action-service browser-server`; and REST
 * calls through them. Nothing here reaches into the service's code, so the figures stay
 * comparable while that code changes.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSandboxUser, startServeProcess, within, type CliProcess } from "../test/chaos/kill-support.js";
import { CLI, freePort } from "../test/helpers/processes.js";
import { processCpuMs } from "./peer-tree.js";

/** What every bench coordinator runs with: run slots for the bench's accounts, no credit or rate limit in the way. */
export const FLEET_ENV = { ACTION_SERVICE_MAX_CONCURRENT_ACTIONS: "16", ACTION_SERVICE_FREE_CREDITS: "1000000", ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "1000000" };

let serial = 0;
export const unique = (label: string): string => `${label} ${Date.now()}-${++serial}`;

/** A REST call to one coordinator; a status of 300 or more is an error (its body in the message). */
export async function call(url: string, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<any> {
  const response = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status >= 300) throw Object.assign(new Error(`${method} ${path}: ${response.status} ${text}`), { status: response.status, retryAfter: response.headers.get("retry-after") });
  return text ? JSON.parse(text) : undefined;
}

/**
 * Creates an action through `url` as a careful client does (an Idempotency-Key, the same request
 * again after a 503 or a broken connection) and waits, through the same coordinator, until it has
 * ended; anything but `succeeded` is an error. Returns how many times it was sent again.
 */
export async function runAction(url: string, key: string, accountId: string, type: string, params: Record<string, unknown> = {}): Promise<number> {
  const idempotencyKey = randomUUID();
  let again = 0;
  let action: any;
  for (;;) {
    try {
      action = await call(url, key, "POST", "/v1/actions?wait=30", { account_id: accountId, type, params }, { "idempotency-key": idempotencyKey });
      break;
    } catch (error) {
      const status = (error as { status?: number }).status;
      if ((status !== undefined && status !== 503) || ++again > 20) throw error;
      await new Promise((resolve) => setTimeout(resolve, Number((error as { retryAfter?: string }).retryAfter ?? 1) * 1000));
    }
  }
  while (action.status === "queued" || action.status === "running") action = await call(url, key, "GET", `/v1/actions/${action.id}?wait=30`);
  if (action.status !== "succeeded") throw new Error(`${type} ${action.status}: ${JSON.stringify(action.error)}`);
  return again;
}

/** SIGTERM, then SIGKILL after 15 s. */
export async function stopProcess(proc: CliProcess): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill("SIGTERM");
  if ((await within(proc.exited, 15_000)) === undefined) {
    proc.child.kill("SIGKILL");
    await proc.exited;
  }
}

/** Coordinators on one store, the first's admin key, and the next one in turn for each request. */
export interface Fleet {
  coordinators: CliProcess[];
  key: string;
  /** The next coordinator's URL, round-robin. */
  next(): string;
  /** Node CPU (utime+stime) each coordinator's process has used so far, ms. */
  cpuMs(): number[];
  /** New sandbox users (no challenge) made accounts through the coordinators in turn; their ids. */
  accounts(count: number): Promise<string[]>;
  stop(): Promise<void>;
}

export interface FleetOptions {
  sandboxUrl: string;
  count: number;
  /** A PostgreSQL database's environment; none: the coordinators share one data dir's SQLite file. */
  database?: Record<string, string>;
  /** `ws://` endpoints every coordinator's browsers are on (`BROWSER_WS_ENDPOINTS`); none: a Chromium each. */
  browsers?: string;
  env?: Record<string, string>;
  /** A label for its temp dir and failure messages. */
  label: string;
}

/** Starts `count` `serve` processes on one store: the first alone (it migrates and makes the workspace), then the others at once. */
export async function startFleet(options: FleetOptions): Promise<Fleet> {
  const dir = mkdtempSync(join(tmpdir(), `action-service-bench-${options.label}-`));
  const coordinators: CliProcess[] = [];
  const env = { ...FLEET_ENV, ...options.env, ...options.database, ...(options.browsers ? { BROWSER_WS_ENDPOINTS: options.browsers } : {}) };
  const start = async (n: number): Promise<CliProcess & { firstKey: string | undefined }> => {
    const dataDir = options.database ? join(dir, `data-${n}`) : join(dir, "data");
    const proc = await startServeProcess({ dataDir, port: await freePort(), sandboxUrl: options.sandboxUrl, logFile: join(dir, `serve-${n}.log`), env });
    coordinators.push(proc);
    return proc;
  };
  const stop = async (): Promise<void> => {
    await Promise.all(coordinators.map(stopProcess));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const key = (await start(1)).firstKey;
    if (!key) throw new Error("the first serve printed no key");
    await Promise.all(Array.from({ length: options.count - 1 }, (_, i) => start(i + 2)));
    let turn = 0;
    const next = (): string => coordinators[turn++ % coordinators.length]!.url;
    return {
      coordinators,
      key,
      next,
      cpuMs: () => coordinators.map((proc) => processCpuMs(proc.pid)),
      async accounts(count) {
        const ids: string[] = [];
        for (let i = 0; i < count; i++) {
          const handle = `${options.label.replace(/[^a-z0-9]/g, "")}${Date.now().toString(36)}${++serial}`;
          await createSandboxUser(options.sandboxUrl, handle);
          ids.push((await call(next(), key, "POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password" })).id);
        }
        return ids;
      },
      stop,
    };
  } catch (error) {
    for (const proc of coordinators) console.log(`(${options.label}) serve ${proc.url}: ${proc.output().slice(-2000)}`);
    await stop();
    throw error;
  }
}

/** Runs `work`; on failure prints the tail of every coordinator's output; stops the fleet either way. */
export async function withFleet<T>(options: FleetOptions, work: (fleet: Fleet) => Promise<T>): Promise<T> {
  const fleet = await startFleet(options);
  try {
    return await work(fleet);
  } catch (error) {
    for (const proc of fleet.coordinators) console.log(`(${options.label}) serve ${proc.url}: ${proc.output().slice(-2000)}`);
    throw error;
  } finally {
    await fleet.stop();
  }
}

/** `action-service browser-server` in a process group of its own: its `ws://` endpoint, and how to stop it (and its Chromium). */
export function startBrowserServer(): Promise<{ endpoint: string; pid: number; stop(): void }> {
  const child = spawn(process.execPath, [CLI, "browser-server", "--port", "0"], { stdio: ["ignore", "pipe", "inherit"], detached: true });
  const stop = (): void => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // gone
    }
  };
  return new Promise((resolve, reject) => {
    let output = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const last = output.trim().split("\n").at(-1)!;
      if (last.startsWith("ws://")) resolve({ endpoint: last, pid: child.pid!, stop });
    });
    child.once("exit", (code) => reject(new Error(`browser-server exited ${code}`)));
  });
}
