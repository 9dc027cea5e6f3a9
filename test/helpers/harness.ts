import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import type { Hono } from "hono";
import { createApp, type AppOptions } from "../../src/api/app.js";
import type { X402Config } from "../../src/config.js";
import type { KeyRole } from "../../src/domain/keys.js";
import { Engine, type EngineOptions } from "../../src/engine/engine.js";
import type { ActionExecutor } from "../../src/engine/execution/index.js";
import { Sealer, Store, openStore, type StoreLocation } from "../../src/store/index.js";
import { describeSessions, testStoreLocation } from "./database.js";
import { FakeClock } from "./clock.js";
import { SCRIPTED_PLATFORM, ScriptedExecutor } from "./scripted-executor.js";

export interface Harness {
  dir: string;
  /** The SQLite file (unused under test:postgres: see `location`). */
  dbFile: string;
  /** Where the store lives, to open it again after `stop()`. */
  location: StoreLocation;
  masterKey: Buffer;
  clock: FakeClock;
  store: Store;
  engine: Engine;
  executor: ActionExecutor;
  app: Hono;
  /** The first workspace's admin key. */
  adminKey: string;
  workspaceId: string;
  request(method: string, path: string, options?: { key?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> }): Promise<TestResponse>;
  key(role: KeyRole, options?: { accountIds?: string[]; workspace?: string }): Promise<string>;
  /** Stops the engine and closes the database, keeping the file (for restart tests). */
  stop(): Promise<void>;
  /** Removes the data dir. */
  destroy(): Promise<void>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  raw: string;
  json: any;
}

export interface HarnessOptions {
  executor?: ActionExecutor;
  engine?: Partial<EngineOptions>;
  app?: Partial<AppOptions>;
  dir?: string;
  masterKey?: Buffer;
  clock?: FakeClock;
  /** Skips creating the first workspace (for restart tests reusing a data dir). */
  adminKey?: string;
  /** The store to open again (restart tests): by default a fresh one in `dir` (or on the test PostgreSQL). */
  location?: StoreLocation;
}

/**
 * x402 settled for tests that only need top-ups to be configured (a request without a payment
 * gets its requirements): the facilitator address is the discard port, where nothing answers,
 * so a payment sent is never credited. Real payments are tested against `x402-devnet`.
 */
export const UNREACHABLE_X402: X402Config = {
  settings: {
    facilitatorUrl: "http://127.0.0.1:9",
    network: "eip155:31337",
    asset: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
    assetName: "USDC",
    assetVersion: "2",
    payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    pricePerCredit: 10_000n,
  },
  missing: [],
  maxCredits: 100_000,
  timeoutMs: 2_000,
};

/**
 * A real store (a SQLite file in a temp dir, or a fresh PostgreSQL database under `npm run
 * test:postgres`), the real engine and the real Hono app; only the platform is scripted.
 */
export async function createHarness(options: HarnessOptions = {}): Promise<Harness> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "action-service-test-"));
  const dbFile = join(dir, "action-service.db");
  const masterKey = options.masterKey ?? randomBytes(32);
  const clock = options.clock ?? new FakeClock();
  const location = options.location ?? (await testStoreLocation(dir));
  const store = await openStore(location, new Sealer(masterKey));
  const executor = options.executor ?? new ScriptedExecutor();
  const engine = new Engine({
    store,
    executor,
    platforms: [SCRIPTED_PLATFORM],
    publicUrl: "http://127.0.0.1:8787",
    clock,
    challengeTtlSeconds: 600,
    sweepIntervalMs: 20,
    x402: UNREACHABLE_X402,
    ...options.engine,
  });
  const adminKey = options.adminKey ?? (await engine.keys.bootstrap())!.key;
  await engine.start();
  const app = createApp({ engine, clock, ...options.app });
  const workspaceId = (await engine.keys.authenticate(adminKey))!.workspaceId;
  let closed = false;
  return {
    dir,
    dbFile,
    location,
    masterKey,
    clock,
    store,
    engine,
    executor,
    app,
    adminKey,
    workspaceId,
    async request(method, path, { key = adminKey, body, rawBody, headers = {} } = {}) {
      const response = await app.request(path, {
        method,
        headers: { ...(key === null ? {} : { authorization: `Bearer ${key}` }), ...(body !== undefined || rawBody !== undefined ? { "content-type": "application/json" } : {}), ...headers },
        ...(rawBody !== undefined ? { body: rawBody } : body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const raw = await response.text();
      return { status: response.status, headers: response.headers, raw, json: jsonOrUndefined(raw) };
    },
    async key(role, { accountIds, workspace } = {}) {
      return (await engine.keys.issue({ role, accountIds, workspaceName: workspace })).key;
    },
    async stop() {
      await closing("engine.stop()", engine.stop(), store);
      closed = true;
      await closing("store.close()", store.close(), store);
    },
    async destroy() {
      await closing("engine.stop()", engine.stop(), store).catch(() => undefined);
      if (!closed) await closing("store.close()", store.close(), store);
      closed = true;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** How long a step of closing a harness runs before it is named on stderr. */
const CLOSING_REPORT_MS = 30_000;

/**
 * Waits for one step of closing a harness. One still running after 30 s is named on stderr, with
 * the database's sessions on PostgreSQL: a test that times out closing then says where it hung.
 */
async function closing<T>(step: string, work: Promise<T>, store: Store): Promise<T> {
  const timer = setTimeout(() => void describeSessions(store).then((sessions) => process.stderr.write(`harness: ${step} still running after ${CLOSING_REPORT_MS / 1000} s${sessions}\n`)), CLOSING_REPORT_MS);
  try {
    return await work;
  } finally {
    clearTimeout(timer);
  }
}

/** The JSON of a response body, or undefined when it is empty or not JSON. */
export function jsonOrUndefined(raw: string): unknown {
  try {
    return raw ? (JSON.parse(raw) as unknown) : undefined;
  } catch {
    return undefined;
  }
}
