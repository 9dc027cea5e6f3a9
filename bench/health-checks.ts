/**
 * Figure (o): health checks (DESIGN §16) of `BENCH_CHECK_ACCOUNTS` (1,000) connected accounts in one
 * interval on this machine, and what they cost: CPU and memory per check, and the actions/s of 16
 * accounts posting meanwhile ÷ the same with the checks stopped (alternating rounds, quiet first).
 *
 * The accounts are rows of their own, each with a real signed-in session of one sandbox user sealed
 * to it (as `connect` leaves it) and last found signed in longer ago than the interval, so every one
 * is due. The interval is `BENCH_CHECK_INTERVAL_MINUTES` (5): the schedule spreads the checks over it.
 * The service has 20 run slots: 16 for the posting accounts, the rest idle, which is all checks may use.
 *
 * The floor beside it: raw Playwright doing what a check of a signed-in account does — a context from
 * the saved session, one request with its cookies for the signed-in page, the context closed — as a
 * hand-written script would, in the same run: machine CPU per check, ours ÷ its.
 */
import { CHECK_TYPE } from "../src/domain/health.js";
import { newId } from "../src/engine/ids.js";
import type { LiveService } from "../test/helpers/live-service.js";
import { startLiveService } from "../test/helpers/live-service.js";
import { connectedAccounts, postRate, user } from "./execution.js";
import { machineBusyMs } from "./peer-tree.js";
import { chromiumPssMb, launchRaw } from "./support.js";

const ACCOUNTS = Number(process.env.BENCH_CHECK_ACCOUNTS ?? 1_000);
const INTERVAL_MINUTES = Number(process.env.BENCH_CHECK_INTERVAL_MINUTES ?? 5);
const ROUNDS = 3;
/** Checks the raw-Playwright floor does. */
const FLOOR_CHECKS = 300;

export interface CheckFigures {
  accounts: number;
  intervalMinutes: number;
  /** Checks done, and the time the checks ran to do them (they are stopped in the quiet rounds). */
  checked: number;
  checkingSeconds: number;
  /** Outcomes: connected (still signed in) expected for all. */
  connected: number;
  cpuMsPerCheck: number;
  /** Raw Playwright's CPU for the same check, measured beside it. */
  floorCpuMsPerCheck: number;
  /** Service RSS and Chromium PSS growth over the checks, per check (the contexts the checks left warm included). */
  kbPerCheck: number;
  quiet: number;
  busy: number;
  ratio: number;
  /** Checks done during the loaded rounds. */
  checksWhileBusy: number;
}

/** The session every due account holds (one sandbox user's, signed in). */
let sharedSession = "";

async function dueAccounts(live: LiveService, count: number): Promise<string[]> {
  const { store } = live.server.service;
  const handle = await user(live);
  const signedIn = await live.account(handle);
  if ((await live.run(signedIn, "connect")).status !== "succeeded") throw new Error("connect failed");
  const session = (await store.accounts.getSecret(signedIn, "session"))!;
  sharedSession = session;
  const profile = (await store.accounts.get(signedIn))!.profile;
  const workspaceId = (await store.workspaces.first())!.id;
  // Found signed in an interval and a minute ago: due now.
  const checkedAt = new Date(Date.now() - (INTERVAL_MINUTES + 1) * 60_000).toISOString();
  const ids: string[] = [];
  for (let i = 0; i < count; i += 500) {
    await store.transaction(async () => {
      for (let j = i; j < Math.min(count, i + 500); j++) {
        const id = newId("acc");
        const now = new Date().toISOString();
        await store.accounts.insert({ id, workspace_id: workspaceId, platform: "sandbox", username: handle, created_at: now });
        await store.accounts.setSecret(id, "password", "sandbox-password", now);
        await store.accounts.setSecret(id, "session", session, now);
        await store.accounts.update(id, { status: "connected", checked_at: checkedAt, ...(profile ? { profile } : {}) }, now);
        ids.push(id);
      }
    });
  }
  return ids;
}

/** Of `ids`, how many were checked after `since`, and how many are connected (one read of the workspace's accounts). */
async function checkedSince(live: LiveService, ids: readonly string[], since: string): Promise<{ checked: number; connected: number }> {
  const { store } = live.server.service;
  const wanted = new Set(ids);
  const accounts = (await store.accounts.list((await store.workspaces.first())!.id, undefined)).filter((account) => wanted.has(account.id));
  return {
    checked: accounts.filter((account) => account.checked_at !== undefined && account.checked_at > since).length,
    connected: accounts.filter((account) => account.status === "connected").length,
  };
}

/** Stops queuing checks and waits for those queued or running to end, so the next round has none. */
async function stopChecks(live: LiveService): Promise<void> {
  live.server.service.engine.healthChecks.stop();
  const { store } = live.server.service;
  while ((await store.actions.withStatus(["queued", "running"])).some((action) => action.type === CHECK_TYPE)) await new Promise((resolve) => setTimeout(resolve, 100));
}

/** Raw Playwright's check of a signed-in session: a context from it, one request with its cookies, closed. Machine CPU ms per check. */
async function floorCpuMs(sandboxUrl: string, session: string, checks: number): Promise<number> {
  const browser = await launchRaw();
  try {
    const storageState = JSON.parse(session);
    const check = async (): Promise<void> => {
      const context = await browser.newContext({ storageState });
      const response = await context.request.get(`${sandboxUrl}/feed`, { maxRedirects: 0 });
      if (response.status() !== 200) throw new Error(`the raw check found the session signed out (${response.status()})`);
      await response.dispose();
      await context.close();
    };
    await check(); // warm-up
    const before = machineBusyMs();
    for (let i = 0; i < checks; i++) await check();
    return (machineBusyMs() - before) / checks;
  } finally {
    await browser.close();
  }
}

export async function healthCheckFigures(): Promise<CheckFigures> {
  const live = await startLiveService({
    env: {
      ACTION_SERVICE_MAX_CONCURRENT_ACTIONS: "20",
      ACTION_SERVICE_FREE_CREDITS: "1000000",
      ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "1000000",
      ACTION_SERVICE_HEALTH_CHECK_MINUTES: String(INTERVAL_MINUTES),
      // The posting accounts stay warm throughout: their pages closing as they idle out would pass for memory the checks gave back.
      ACTION_SERVICE_IDLE_CONTEXT_SECONDS: "3600",
      ACTION_SERVICE_WARM_PAGE_SECONDS: "3600",
    },
    server: { healthCheckTickMs: 1_000 },
  });
  const checks = live.server.service.engine.healthChecks;
  try {
    checks.stop();
    const workers = await connectedAccounts(live, 16);
    await postRate(live, workers, 1); // warm-up
    const ids = await dueAccounts(live, ACCOUNTS);
    const since = new Date(Date.now() - 1_000).toISOString();
    const memoryBefore = process.memoryUsage().rss / 1024 + chromiumPssMb() * 1024;

    // Alternating rounds: the checks stopped, then running beside the same posts.
    let quietMs = 0;
    let busyMs = 0;
    let checksWhileBusy = 0;
    for (let round = 0; round < ROUNDS; round++) {
      quietMs += ((workers.length * 2) / (await postRate(live, workers))) * 1000;
      const before = (await checkedSince(live, ids, since)).checked;
      checks.start();
      busyMs += ((workers.length * 2) / (await postRate(live, workers))) * 1000;
      await stopChecks(live);
      checksWhileBusy += (await checkedSince(live, ids, since)).checked - before;
    }

    // Then the checks alone for the rest of the interval: their CPU is the machine's busy time.
    const checkedBefore = (await checkedSince(live, ids, since)).checked;
    const busyBefore = machineBusyMs();
    const alone = Date.now();
    checks.start();
    // The interval's worth of checking time in all (the loaded rounds' included), and a half more.
    const deadline = alone + INTERVAL_MINUTES * 60_000 * 1.5 - busyMs;
    let done = await checkedSince(live, ids, since);
    while (done.checked < ids.length && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      done = await checkedSince(live, ids, since);
    }
    const cpuMs = machineBusyMs() - busyBefore;
    const checkingSeconds = (busyMs + Date.now() - alone) / 1000;
    await stopChecks(live);
    const memoryAfter = process.memoryUsage().rss / 1024 + chromiumPssMb() * 1024;
    const floorCpuMsPerCheck = await floorCpuMs(live.sandbox.url, sharedSession, FLOOR_CHECKS);
    const posts = workers.length * 2 * ROUNDS;
    const quiet = (posts / quietMs) * 1000;
    const busy = (posts / busyMs) * 1000;
    return {
      accounts: ids.length,
      intervalMinutes: INTERVAL_MINUTES,
      checked: done.checked,
      checkingSeconds,
      connected: done.connected,
      cpuMsPerCheck: cpuMs / Math.max(1, done.checked - checkedBefore),
      floorCpuMsPerCheck,
      kbPerCheck: (memoryAfter - memoryBefore) / Math.max(1, done.checked),
      quiet,
      busy,
      ratio: busy / quiet,
      checksWhileBusy,
    };
  } finally {
    await live.close();
  }
}
