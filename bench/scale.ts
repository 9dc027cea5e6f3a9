/**
 * Benchmarks of scale: many accounts in one service.
 * (b′) `BENCH_WARM_MANY` (1,000) accounts warm in one Chromium (context open, no page): MB (PSS) per
 *      context, and a post on the last account opened ÷ a post on the first;
 * (h) `BENCH_CONNECTED` (10,000) accounts with saved sessions: a post on a cold account (its context
 *     restored from the saved session) ÷ a post on a warm one, and the process's RSS per stored account;
 * (i) start-up of `action-service serve` on a data dir with `BENCH_STARTUP_ACCOUNTS` (10,000) accounts
 *     and `BENCH_STARTUP_ACTIONS` (100,000) actions, as a crashed process left it, ÷ on an empty one.
 */
import { spawn, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { issueKey } from "../src/engine/access/index.js";
import { processIdentity } from "../src/engine/execution/process-identity.js";
import { newId } from "../src/engine/ids.js";
import { startSandbox } from "../src/sandbox/index.js";
import { Sealer, loadMasterKey, openStore, randomToken } from "../src/store/index.js";
import type { ActionRecord } from "../src/store/records.js";
import { startLiveService, type LiveService } from "../test/helpers/live-service.js";
import { CLI, freePort } from "../test/helpers/processes.js";
import { user } from "./execution.js";
import { chromiumPssMb, median } from "./support.js";

const SERVICE_ENV = { ACTION_SERVICE_MAX_CONCURRENT_ACTIONS: "16", ACTION_SERVICE_FREE_CREDITS: "1000000", ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "1000000" };
let serial = 0;
const unique = (label: string): string => `${label} ${Date.now()}-${++serial}`;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One post through `POST /v1/actions?wait=30`, as a client makes it; milliseconds. */
async function timedPost(live: LiveService, accountId: string): Promise<number> {
  const start = performance.now();
  const response = await live.api("POST", "/v1/actions?wait=30", { account_id: accountId, type: "post", params: { text: unique("scale") } });
  const action = response.json.status === "succeeded" ? response.json : await live.wait(response.json.id);
  if (action.status !== "succeeded") throw new Error(`post ${action.status}: ${JSON.stringify(action.error)}`);
  return performance.now() - start;
}

export async function warmMany(count = Number(process.env.BENCH_WARM_MANY ?? 1_000), samples = 7): Promise<{
  count: number;
  mbPerContext: number;
  first: number;
  last: number;
  warmingSeconds: number;
}> {
  // Every context stays warm, and none keeps a page: what a warm account without a page costs.
  const env = { ACTION_SERVICE_IDLE_CONTEXT_SECONDS: "86400", ACTION_SERVICE_WARM_CONTEXTS: String(count), ACTION_SERVICE_WARM_PAGES: "0" };
  const live = await startLiveService({ env: { ...SERVICE_ENV, ...env } });
  try {
    await live.server.pool.browser();
    await sleep(1_000);
    const base = chromiumPssMb();
    const ids: string[] = [];
    for (let i = 0; i < count; i += 16) {
      ids.push(...(await Promise.all(Array.from({ length: Math.min(16, count - i) }, async () => live.account(await user(live))))));
    }
    const start = performance.now();
    for (let i = 0; i < ids.length; i += 16) {
      const batch = await Promise.all(ids.slice(i, i + 16).map((id) => live.run(id, "connect")));
      if (batch.some((action) => action.status !== "succeeded")) throw new Error("connect failed");
      if ((i + 16) % 200 === 0) console.log(`(b′) warm so far: ${live.server.pool.size} of ${count}`);
    }
    const warmingSeconds = (performance.now() - start) / 1000;
    const warm = live.server.pool.size;
    if (warm !== count) throw new Error(`${warm} of ${count} contexts stayed warm`);
    await sleep(1_000);
    const mbPerContext = (chromiumPssMb() - base) / warm;
    const [firstId, lastId] = [ids[0]!, ids.at(-1)!];
    for (let i = 0; i < 2; i++) {
      await timedPost(live, firstId);
      await timedPost(live, lastId);
    }
    const first: number[] = [];
    const last: number[] = [];
    for (let i = 0; i < samples; i++) {
      first.push(await timedPost(live, firstId));
      last.push(await timedPost(live, lastId));
    }
    if (live.server.pool.size !== count) throw new Error(`${live.server.pool.size} of ${count} contexts warm after the posts`);
    return { count: warm, mbPerContext, first: median(first), last: median(last), warmingSeconds };
  } finally {
    await live.close();
  }
}

/** The process's RSS and V8 heap in use (MB) after a full garbage collection, the lowest of a few readings. */
async function settledMemoryMb(): Promise<{ rss: number; heap: number }> {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  const rss: number[] = [];
  const heap: number[] = [];
  for (let i = 0; i < 3; i++) {
    gc();
    await sleep(500);
    const usage = process.memoryUsage();
    rss.push(usage.rss / 2 ** 20);
    heap.push(usage.heapUsed / 2 ** 20);
  }
  return { rss: Math.min(...rss), heap: Math.min(...heap) };
}

export async function connectedMany(count = Number(process.env.BENCH_CONNECTED ?? 10_000), samples = 9, idleSeconds = 10): Promise<{
  count: number;
  cold: number;
  warm: number;
  kbPerAccount: number;
  heapKbPerAccount: number;
  rssFew: number;
  rssMany: number;
  maxWarm: number;
}> {
  const live = await startLiveService({ env: { ...SERVICE_ENV, ACTION_SERVICE_IDLE_CONTEXT_SECONDS: String(idleSeconds) } });
  try {
    const { store } = live.server.service;
    const handle = await user(live);
    const signedIn = await live.account(handle);
    if ((await live.run(signedIn, "connect")).status !== "succeeded") throw new Error("connect failed");
    const session = (await store.accounts.getSecret(signedIn, "session"))!;
    const profile = (await store.accounts.get(signedIn))!.profile;
    const workspaceId = (await store.workspaces.first())!.id;
    // Each a row of its own with the signed-in user's session sealed to it, as a connect leaves it.
    const addAccounts = async (howMany: number): Promise<string[]> => {
      const ids: string[] = [];
      for (let i = 0; i < howMany; i += 500) {
        await store.transaction(async () => {
          for (let j = i; j < Math.min(howMany, i + 500); j++) {
            const id = newId("acc");
            const now = new Date().toISOString();
            await store.accounts.insert({ id, workspace_id: workspaceId, platform: "sandbox", username: handle, created_at: now });
            await store.accounts.setSecret(id, "password", "sandbox-password", now);
            await store.accounts.setSecret(id, "session", session, now);
            await store.accounts.update(id, { status: "connected", ...(profile ? { profile } : {}) }, now);
            ids.push(id);
          }
        });
      }
      return ids;
    };
    let maxWarm = 0;
    // The same work on few accounts and on many: list them, then post on cold accounts (never used:
    // the context is opened from the saved session) and on each again right after (warm), then let
    // the idle contexts close and read the process's memory.
    const POST_SPACING_MS = 2_000;
    const phase = async (ids: string[]): Promise<{ cold: number[]; warm: number[]; memory: { rss: number; heap: number } }> => {
      const listed = await live.api("GET", "/v1/accounts");
      if (listed.status !== 200) throw new Error(`GET /v1/accounts: ${listed.status}`);
      const order = ids.map((id) => ({ id, key: Math.random() })).sort((a, b) => a.key - b.key).map(({ id }) => id);
      const cold: number[] = [];
      const warm: number[] = [];
      for (let i = 0; i < samples + 2; i++) {
        const id = order[i]!;
        if (live.server.pool.contextOf(id)) throw new Error("a cold account had a context");
        // Each post on an otherwise idle service, as (a) measures: what one post leaves the pool to
        // do once idle (open the next spare context and page) is not counted in the next one.
        await sleep(POST_SPACING_MS);
        const coldMs = await timedPost(live, id);
        await sleep(POST_SPACING_MS);
        const warmMs = await timedPost(live, id);
        maxWarm = Math.max(maxWarm, live.server.pool.size);
        if (i < 2) continue; // warm-up
        cold.push(coldMs);
        warm.push(warmMs);
      }
      await live.until(() => live.server.pool.size === 0, (idleSeconds + 20) * 1000);
      return { cold, warm, memory: await settledMemoryMb() };
    };
    const few = await phase(await addAccounts(samples + 2));
    const many = await phase(await addAccounts(count));
    const perAccount = (mb: number): number => (mb * 1024) / count;
    return {
      count,
      cold: median(many.cold),
      warm: median(many.warm),
      kbPerAccount: perAccount(many.memory.rss - few.memory.rss),
      heapKbPerAccount: perAccount(many.memory.heap - few.memory.heap),
      rssFew: few.memory.rss,
      rssMany: many.memory.rss,
      maxWarm,
    };
  } finally {
    await live.close();
  }
}

const STORAGE_STATE = JSON.stringify({
  cookies: [{ name: "sandbox_session", value: "x".repeat(43), domain: "127.0.0.1", path: "/", expires: -1, httpOnly: true, secure: false, sameSite: "Lax" }],
  origins: [],
});

/**
 * A data dir as a `serve` killed with -9 leaves it: `accounts` connected accounts and `actions`
 * actions, the newest 1,000 of them (at most 1%) unfinished — queued, running and needs_input
 * (with an open challenge) — held by a runner whose process is gone. Written through the Store.
 */
async function seedDataDir(dataDir: string, accounts: number, actions: number): Promise<void> {
  const store = await openStore({ sqliteFile: join(dataDir, "action-service.db") }, new Sealer(loadMasterKey(dataDir, undefined)));
  try {
    const start = Date.now() - 30 * 86_400_000;
    const at = (ms: number): string => new Date(ms).toISOString();
    const workspaceId = (await issueKey(store, { role: "admin", freeCredits: 1_000_000, now: at(start) })).workspace.id;
    const runnerId = newId("run");
    const deadPid = spawnSync("true").pid!;
    await store.runners.register({ id: runnerId, kind: "serve", host: processIdentity(deadPid), pid: deadPid, public_url: null, internal_url: null }, { now: at(Date.now()), leaseMs: 3_600_000 });
    const accountIds: string[] = [];
    for (let i = 0; i < accounts; i += 1_000) {
      await store.transaction(async () => {
        for (let j = i; j < Math.min(accounts, i + 1_000); j++) {
          const id = newId("acc");
          const now = at(start + j);
          await store.accounts.insert({ id, workspace_id: workspaceId, platform: "sandbox", username: `user${j}`, created_at: now });
          await store.accounts.setSecret(id, "password", "sandbox-password", now);
          await store.accounts.setSecret(id, "session", STORAGE_STATE, now);
          await store.accounts.update(id, { status: "connected", profile: { handle: `user${j}`, name: `User ${j}` } }, now);
          accountIds.push(id);
        }
      });
    }
    const unfinished = Math.min(1_000, Math.floor(actions / 100));
    const step = (Date.now() - 60_000 - start) / actions;
    for (let i = 0; i < actions; i += 5_000) {
      await store.transaction(async () => {
        for (let k = i; k < Math.min(actions, i + 5_000); k++) {
          const created = start + k * step;
          const left = actions - k; // 1 for the newest
          const status: ActionRecord["status"] =
            left <= unfinished * 0.3 ? "needs_input" : left <= unfinished * 0.6 ? "running" : left <= unfinished ? "queued" : k % 50 === 0 ? "failed" : k % 97 === 0 ? "canceled" : "succeeded";
          const ended = status === "succeeded" || status === "failed" || status === "canceled";
          const id = newId("act");
          await store.actions.insert({
            id,
            workspace_id: workspaceId,
            account_id: accountIds[k % accountIds.length]!,
            platform: "sandbox",
            type: "post",
            params: { text: `Post number ${k}` },
            status,
            error_code: status === "failed" ? "ui_changed" : undefined,
            error_message: status === "failed" ? "The page did not respond as the driver expects." : undefined,
            result: status === "succeeded" ? { post_id: `p${k}`, url: `http://127.0.0.1/posts/p${k}` } : undefined,
            price: 1,
            cost: status === "succeeded" ? 1 : 0,
            held: !ended,
            runner_id: status === "running" || status === "needs_input" ? runnerId : undefined,
            lease: 1,
            committed_at: undefined,
            created_at: at(created),
            updated_at: at(created + 2_000),
            finished_at: ended ? at(created + 2_000) : undefined,
          });
          if (status === "needs_input") {
            await store.challenges.insert(
              {
                id: newId("chl"),
                action_id: id,
                kind: "email_code",
                message: "Enter the code the platform e-mailed.",
                expires_at: at(Date.now() + 600_000),
                link_expires_at: at(Date.now() + 600_000),
                refusals: 0,
                state: "open",
                created_at: at(created + 1_000),
              },
              randomToken(),
            );
          }
        }
      });
    }
    store.sqlite!.pragma("wal_checkpoint(TRUNCATE)");
  } finally {
    await store.close();
  }
}

/** Spawns `node dist/cli.js serve` on the data dir; milliseconds from spawn to `GET /healthz` 200. Stops it after. */
async function timeToHealthy(dataDir: string, sandboxUrl: string, nodeArgs: string[] = []): Promise<number> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, ACTION_SERVICE_DATA_DIR: dataDir, ACTION_SERVICE_PORT: String(port), SANDBOX_URL: sandboxUrl };
  const start = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, CLI, "serve"], { env, stdio: ["ignore", "ignore", "pipe"] });
  // Its log (the actions it recovers, the queued ones it then runs) is shown only if it fails to start.
  let log = "";
  child.stderr!.on("data", (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4_000)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode}: ${log}`);
      const healthy = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (response) => response.status === 200,
        () => false,
      );
      if (healthy) return performance.now() - start;
      if (performance.now() - start > 120_000) throw new Error(`serve not healthy within 120 s: ${log}`);
      await sleep(5);
    }
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
}

export async function startUp(
  accounts = Number(process.env.BENCH_STARTUP_ACCOUNTS ?? 10_000),
  actions = Number(process.env.BENCH_STARTUP_ACTIONS ?? 100_000),
  runs = 3,
): Promise<{ accounts: number; actions: number; loaded: number; empty: number; seedSeconds: number }> {
  const sandbox = await startSandbox({ port: 0 });
  const root = mkdtempSync(join(tmpdir(), "action-service-startup-"));
  try {
    const seeded = join(root, "seeded");
    const seedStart = performance.now();
    await seedDataDir(seeded, accounts, actions);
    const seedSeconds = (performance.now() - seedStart) / 1000;
    // A start recovers what it finds, so each loaded start gets its own copy of the crashed data dir.
    const profileDir = process.env.BENCH_STARTUP_CPU_PROF;
    const loaded: number[] = [];
    const empty: number[] = [];
    for (let run = 0; run < runs; run++) {
      const copy = join(root, `loaded-${run}`);
      cpSync(seeded, copy, { recursive: true });
      loaded.push(await timeToHealthy(copy, sandbox.url));
      empty.push(await timeToHealthy(join(root, `empty-${run}`), sandbox.url));
    }
    if (profileDir) {
      const copy = join(root, "profiled");
      cpSync(seeded, copy, { recursive: true });
      await timeToHealthy(copy, sandbox.url, ["--cpu-prof", `--cpu-prof-dir=${profileDir}`]);
    }
    return { accounts, actions, loaded: median(loaded), empty: median(empty), seedSeconds };
  } finally {
    await sandbox.close();
    rmSync(root, { recursive: true, force: true });
  }
}
