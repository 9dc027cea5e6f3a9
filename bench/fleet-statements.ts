/**
 * (s) What a warm post costs the database, counted by the database (DESIGN §11, "Scaling out adds
 * capacity"): N = 1, 2, 3 `serve` processes on one PostgreSQL database of a cluster that counts
 * every statement (`pg_stat_statements`) and syncs its commits (bench/postgres.ts `counted`), each
 * with its own data dir, port and Chromium, as (l) starts them. One account, connected and warmed
 * by 3 posts; then nothing to do for a while (the idle rate), then posts one at a time, each
 * created through the next coordinator in turn. Beside it: the same on SQLite (one `serve` for its
 * CPU, and the store's own count in-process, since nothing outside counts SQLite's statements).
 */
import { statementsPerPost } from "./coordinators.js";
import { runAction, unique, withFleet, type Fleet } from "./fleet.js";
import type { BenchPostgres } from "./postgres.js";

const POSTS = Number(process.env.BENCH_STATEMENT_POSTS ?? 20);
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 10);
/** Let what the warm-up left (kept pages, the outbox) finish before anything is counted. */
const SETTLE_MS = 5_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface FleetStatementsRun {
  coordinators: number;
  /** Statements PostgreSQL ran in the database per post, all coordinators together. */
  perPost: number;
  /** Statements a second per coordinator while nothing is asked of any. */
  idlePerSecondEach: number;
  /** Node CPU (utime+stime) of all coordinators per post, ms: idle work during the posts included. */
  cpuMsPerPost: number;
  /** Wall time of one post through REST (create with a wait, then polls), mean ms. */
  msPerPost: number;
}

export interface FleetStatements {
  durable: boolean;
  postgres: FleetStatementsRun[];
  sqlite: { perPost: number; idlePerSecond: number; cpuMsPerPost: number; msPerPost: number };
  /** `pg_stat_statements` entries evicted during the runs: each count is short by some when not 0. */
  evicted: number;
}

/** A connected account, warmed by 3 posts through the coordinators in turn. */
export async function warmAccount(fleet: Fleet): Promise<string> {
  const [account] = await fleet.accounts(1);
  await runAction(fleet.next(), fleet.key, account!, "connect");
  for (let i = 0; i < 3; i++) await runAction(fleet.next(), fleet.key, account!, "post", { text: unique("warm-up") });
  await sleep(SETTLE_MS);
  return account!;
}

/** `POSTS` posts one at a time through the coordinators in turn: wall ms and all coordinators' CPU ms. */
async function postsOneAtATime(fleet: Fleet, account: string): Promise<{ ms: number; cpuMs: number }> {
  const cpuBefore = fleet.cpuMs();
  const started = performance.now();
  for (let i = 0; i < POSTS; i++) await runAction(fleet.next(), fleet.key, account, "post", { text: unique("statements") });
  const ms = performance.now() - started;
  const cpuMs = fleet.cpuMs().reduce((sum, used, i) => sum + used - cpuBefore[i]!, 0);
  return { ms, cpuMs };
}

async function onPostgres(postgres: BenchPostgres, sandboxUrl: string, count: number): Promise<FleetStatementsRun> {
  const database = await postgres.database();
  return withFleet({ sandboxUrl, count, database, label: "s" }, async (fleet) => {
    const account = await warmAccount(fleet);
    const idleFrom = await postgres.statements(database);
    await sleep(IDLE_SECONDS * 1000);
    const idle = (await postgres.statements(database)) - idleFrom;
    const from = await postgres.statements(database);
    const { ms, cpuMs } = await postsOneAtATime(fleet, account);
    const perPost = ((await postgres.statements(database)) - from) / POSTS;
    console.log(`(s) PostgreSQL, ${count} coordinators: ${perPost.toFixed(1)} statements per post, idle ${(idle / IDLE_SECONDS / count).toFixed(2)}/s each`);
    return { coordinators: count, perPost, idlePerSecondEach: idle / IDLE_SECONDS / count, cpuMsPerPost: cpuMs / POSTS, msPerPost: ms / POSTS };
  });
}

export async function fleetStatements(postgres: BenchPostgres, sandboxUrl: string): Promise<FleetStatements> {
  const runs: FleetStatementsRun[] = [];
  for (const count of [1, 2, 3]) runs.push(await onPostgres(postgres, sandboxUrl, count));
  const sqliteCpu = await withFleet({ sandboxUrl, count: 1, label: "s-sqlite" }, async (fleet) => postsOneAtATime(fleet, await warmAccount(fleet)));
  const sqliteCount = await statementsPerPost({});
  return {
    durable: postgres.durable,
    postgres: runs,
    sqlite: { ...sqliteCount, cpuMsPerPost: sqliteCpu.cpuMs / POSTS, msPerPost: sqliteCpu.ms / POSTS },
    evicted: await postgres.evicted(),
  };
}
