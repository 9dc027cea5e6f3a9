/**
 * (l) Coordinators on one PostgreSQL database (DESIGN §11): a sandbox in a process of its own and
 * N = 1, 2, 3 `serve` processes (`node dist/cli.js serve`, build first), each with its own data
 * dir, port and Chromium, on one fresh database, as test/postgres/support.ts starts them; and one
 * `serve` on its data dir's SQLite file for comparison. 16 accounts post twice each, all at once,
 * every post created through the next coordinator in turn (whichever coordinator claims it runs
 * it: the database is the queue); actions/s, and each coordinator's Node CPU (utime+stime from
 * `/proc/<pid>/stat`, its Chromium not included) per action. Beside them: raw Playwright with 16
 * contexts on the same sandbox, and the statements (round trips, on PostgreSQL) a warm post costs
 * on each store, counted by the store in-process.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSandboxUser, startSandboxProcess, startServeProcess, within, type CliProcess } from "../test/chaos/kill-support.js";
import { startLiveService, type LiveService } from "../test/helpers/live-service.js";
import { freePort } from "../test/helpers/processes.js";
import { processCpuMs } from "./peer-tree.js";
import { startBenchPostgres, type BenchPostgres } from "./postgres.js";
import { launchRaw, rawPost, rawSignedIn } from "./support.js";

const ACCOUNTS = 16;
const PER_ACCOUNT = 2;
const ROUNDS = Number(process.env.BENCH_COORDINATOR_ROUNDS ?? 2);
const STATEMENT_POSTS = 10;
const SERVICE_ENV = { ACTION_SERVICE_MAX_CONCURRENT_ACTIONS: "16", ACTION_SERVICE_FREE_CREDITS: "1000000", ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "1000000" };

let serial = 0;
const unique = (label: string): string => `${label} ${Date.now()}-${++serial}`;

export interface CoordinatorRun {
  coordinators: number;
  actionsPerSecond: number;
  /** Node CPU of all coordinators per action, and of each (ms). */
  cpuMsPerAction: number;
  cpuMsEach: number[];
}

export interface StatementsPerPost {
  perPost: number;
  /** What the service sends while nothing runs (heartbeats, polls): part of every post's count. */
  idlePerSecond: number;
}

/** A REST call to one coordinator. */
async function call(url: string, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Creates an action through `url` and waits, through the same coordinator, until it has ended. */
async function run(url: string, key: string, accountId: string, type: string, params: Record<string, unknown> = {}): Promise<void> {
  let action = await call(url, key, "POST", "/v1/actions?wait=30", { account_id: accountId, type, params });
  while (action.status === "queued" || action.status === "running") action = await call(url, key, "GET", `/v1/actions/${action.id}?wait=30`);
  if (action.status !== "succeeded") throw new Error(`${type} ${action.status}: ${JSON.stringify(action.error)}`);
}

async function stop(proc: CliProcess): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill("SIGTERM");
  if ((await within(proc.exited, 15_000)) === undefined) {
    proc.child.kill("SIGKILL");
    await proc.exited;
  }
}

/** N coordinators on one store (`env` names a PostgreSQL database, or none: the first's SQLite file). */
async function coordinatorRate(sandboxUrl: string, count: number, env: Record<string, string>): Promise<CoordinatorRun> {
  const dir = mkdtempSync(join(tmpdir(), "action-service-bench-l-"));
  const coordinators: CliProcess[] = [];
  const start = async (n: number): Promise<CliProcess & { firstKey: string | undefined }> => {
    const proc = await startServeProcess({ dataDir: join(dir, `data-${n}`), port: await freePort(), sandboxUrl, logFile: join(dir, `serve-${n}.log`), env: { ...SERVICE_ENV, ...env } });
    coordinators.push(proc);
    return proc;
  };
  try {
    // The first makes the workspace and prints its key; the others find them in the database.
    const key = (await start(1)).firstKey;
    if (!key) throw new Error("the first serve printed no key");
    await Promise.all(Array.from({ length: count - 1 }, (_, i) => start(i + 2)));
    let turn = 0;
    const next = (): string => coordinators[turn++ % coordinators.length]!.url;
    const ids: string[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      const handle = `l${Date.now().toString(36)}${++serial}`;
      await createSandboxUser(sandboxUrl, handle);
      ids.push((await call(next(), key, "POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password" })).id);
    }
    await Promise.all(ids.map((id) => run(next(), key, id, "connect")));
    const posts = (perAccount: number): Promise<unknown> =>
      Promise.all(ids.map(async (id) => {
        for (let i = 0; i < perAccount; i++) await run(next(), key, id, "post", { text: unique("coordinators") });
      }));
    await posts(1); // warm-up
    const before = coordinators.map((proc) => processCpuMs(proc.pid));
    const started = performance.now();
    for (let round = 0; round < ROUNDS; round++) await posts(PER_ACCOUNT);
    const seconds = (performance.now() - started) / 1000;
    const actions = ACCOUNTS * PER_ACCOUNT * ROUNDS;
    const cpuMsEach = coordinators.map((proc, i) => (processCpuMs(proc.pid) - before[i]!) / actions);
    return { coordinators: count, actionsPerSecond: actions / seconds, cpuMsPerAction: cpuMsEach.reduce((sum, ms) => sum + ms, 0), cpuMsEach };
  } catch (error) {
    for (const proc of coordinators) console.log(`(l) serve ${proc.url}: ${proc.output().slice(-2000)}`);
    throw error;
  } finally {
    await Promise.all(coordinators.map(stop));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The same posts from raw Playwright: 16 contexts on the same sandbox, signed in once. */
async function rawRate(sandboxUrl: string): Promise<number> {
  const browser = await launchRaw();
  try {
    const handles = Array.from({ length: ACCOUNTS }, () => `r${Date.now().toString(36)}${++serial}`);
    for (const handle of handles) await createSandboxUser(sandboxUrl, handle);
    const contexts = await Promise.all(handles.map((handle) => rawSignedIn(browser, sandboxUrl, handle)));
    const posts = (perAccount: number): Promise<unknown> =>
      Promise.all(contexts.map(async (context) => {
        for (let i = 0; i < perAccount; i++) await rawPost(context, sandboxUrl, unique("coordinators raw"));
      }));
    await posts(1);
    const started = performance.now();
    for (let round = 0; round < ROUNDS; round++) await posts(PER_ACCOUNT);
    return (ACCOUNTS * PER_ACCOUNT * ROUNDS) / ((performance.now() - started) / 1000);
  } finally {
    await browser.close();
  }
}

/** Statements the store sends for one warm post through REST (create with a wait), one at a time. */
async function statementsPerPost(env: Record<string, string>): Promise<StatementsPerPost> {
  const live: LiveService = await startLiveService({ env: { ...SERVICE_ENV, ...env } });
  try {
    const account = await live.account(await live.user("none"));
    if ((await live.run(account, "connect")).status !== "succeeded") throw new Error("connect failed");
    for (let i = 0; i < 3; i++) await live.run(account, "post", { text: unique("warm-up") });
    const store = live.server.service.store;
    await new Promise((resolve) => setTimeout(resolve, 500));
    const idleFrom = store.statementCount;
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const idlePerSecond = (store.statementCount - idleFrom) / 2;
    const from = store.statementCount;
    for (let i = 0; i < STATEMENT_POSTS; i++) {
      const response = await live.api("POST", "/v1/actions?wait=30", { account_id: account, type: "post", params: { text: unique("statements") } });
      if (response.json.status !== "succeeded") throw new Error(`post ${response.json.status}`);
    }
    return { perPost: (store.statementCount - from) / STATEMENT_POSTS, idlePerSecond };
  } finally {
    await live.close();
  }
}

export async function coordinatorScaling(): Promise<{ postgres: CoordinatorRun[]; sqlite: CoordinatorRun; raw: number; statements: { sqlite: StatementsPerPost; postgres: StatementsPerPost } }> {
  const dir = mkdtempSync(join(tmpdir(), "action-service-bench-l-sandbox-"));
  let postgres: BenchPostgres | undefined;
  let sandbox: CliProcess | undefined;
  try {
    postgres = await startBenchPostgres();
    sandbox = await startSandboxProcess(join(dir, "sandbox.log"));
    const raw = await rawRate(sandbox.url);
    const sqlite = await coordinatorRate(sandbox.url, 1, {});
    console.log(`(l) SQLite, 1 coordinator: ${sqlite.actionsPerSecond.toFixed(2)} actions/s`);
    const runs: CoordinatorRun[] = [];
    for (const count of [1, 2, 3]) {
      runs.push(await coordinatorRate(sandbox.url, count, await postgres.database()));
      console.log(`(l) PostgreSQL, ${count} coordinators: ${runs.at(-1)!.actionsPerSecond.toFixed(2)} actions/s`);
    }
    const statements = { sqlite: await statementsPerPost({}), postgres: await statementsPerPost(await postgres.database()) };
    return { postgres: runs, sqlite, raw, statements };
  } finally {
    if (sandbox) await stop(sandbox);
    await postgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
