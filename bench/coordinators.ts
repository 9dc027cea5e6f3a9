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
import { createSandboxUser, startSandboxProcess, type CliProcess } from "../test/chaos/kill-support.js";
import { startLiveService, type LiveService } from "../test/helpers/live-service.js";
import { FLEET_ENV, runAction, stopProcess, unique, withFleet } from "./fleet.js";
import { startBenchPostgres, type BenchPostgres } from "./postgres.js";
import { launchRaw, rawPost, rawSignedIn } from "./support.js";

const ACCOUNTS = 16;
const PER_ACCOUNT = 2;
const ROUNDS = Number(process.env.BENCH_COORDINATOR_ROUNDS ?? 2);
const STATEMENT_POSTS = 10;

let serial = 0;

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

/** N coordinators on one store (`database` names a PostgreSQL database, or none: the first's SQLite file), each with its own Chromium. */
async function coordinatorRate(sandboxUrl: string, count: number, database?: Record<string, string>): Promise<CoordinatorRun> {
  return withFleet({ sandboxUrl, count, label: "l", ...(database ? { database } : {}) }, async (fleet) => {
    const ids = await fleet.accounts(ACCOUNTS);
    await Promise.all(ids.map((id) => runAction(fleet.next(), fleet.key, id, "connect")));
    const posts = (perAccount: number): Promise<unknown> =>
      Promise.all(ids.map(async (id) => {
        for (let i = 0; i < perAccount; i++) await runAction(fleet.next(), fleet.key, id, "post", { text: unique("coordinators") });
      }));
    await posts(1); // warm-up
    const before = fleet.cpuMs();
    const started = performance.now();
    for (let round = 0; round < ROUNDS; round++) await posts(PER_ACCOUNT);
    const seconds = (performance.now() - started) / 1000;
    const actions = ACCOUNTS * PER_ACCOUNT * ROUNDS;
    const cpuMsEach = fleet.cpuMs().map((ms, i) => (ms - before[i]!) / actions);
    return { coordinators: count, actionsPerSecond: actions / seconds, cpuMsPerAction: cpuMsEach.reduce((sum, ms) => sum + ms, 0), cpuMsEach };
  });
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
export async function statementsPerPost(env: Record<string, string>): Promise<StatementsPerPost> {
  const live: LiveService = await startLiveService({ env: { ...FLEET_ENV, ...env } });
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
      // With an Idempotency-Key, as the fleet's posts (bench/fleet.ts) are sent: (s) compares like with like.
      const text = unique("statements");
      const response = await live.api("POST", "/v1/actions?wait=30", { account_id: account, type: "post", params: { text } }, { headers: { "idempotency-key": text } });
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
    const sqlite = await coordinatorRate(sandbox.url, 1);
    console.log(`(l) SQLite, 1 coordinator: ${sqlite.actionsPerSecond.toFixed(2)} actions/s`);
    const runs: CoordinatorRun[] = [];
    for (const count of [1, 2, 3]) {
      runs.push(await coordinatorRate(sandbox.url, count, await postgres.database()));
      console.log(`(l) PostgreSQL, ${count} coordinators: ${runs.at(-1)!.actionsPerSecond.toFixed(2)} actions/s`);
    }
    const statements = { sqlite: await statementsPerPost({}), postgres: await statementsPerPost(await postgres.database()) };
    return { postgres: runs, sqlite, raw, statements };
  } finally {
    if (sandbox) await stopProcess(sandbox);
    await postgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
