import { afterEach, describe, expect, it } from "vitest";
import { INTERRUPTED_AFTER_COMMIT, Lifecycle, Pacing } from "../../src/engine/execution/index.js";
import { unrunActions } from "../../src/engine/execution/recovery.js";
import { MAY_HAVE_BEEN_DONE, NOTHING_DONE } from "../../src/engine/execution/run.js";
import { silentLogger } from "../../src/engine/logger.js";
import { Sealer, openStore, type Store } from "../../src/store/index.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { SCRIPTED_PLATFORM, ScriptedExecutor } from "../helpers/scripted-executor.js";

// What a live runner holds in the store and does not run (a claim whose answer was lost, a run
// that ended without its end written): nobody else recovers it, since the runner is alive, so the
// runner takes it up itself (`unrunActions`). A harness whose own runner claims nothing, and a
// runner of the test's own that claims and runs nothing.
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function held(count: number): Promise<{ h: Harness; store: Store; lifecycle: Lifecycle; runnerId: string; leaseNow: string; ids: string[] }> {
  const h = await createHarness({ engine: { maxConcurrent: 0 } });
  cleanups.push(() => h.destroy());
  for (let i = 0; i < count; i++) {
    const account = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: `held-${i}`, password: "pw" } })).json.id as string;
    expect((await h.request("POST", "/v1/actions", { body: { account_id: account, type: "post", params: { text: `post ${i}` } } })).status).toBe(202);
  }
  const store = await openStore(h.location, new Sealer(h.masterKey));
  cleanups.push(() => store.close());
  const runnerId = "run_unrun";
  const leaseNow = await store.runners.register({ id: runnerId, kind: "test", host: "test", pid: process.pid, public_url: null, internal_url: null }, { now: new Date().toISOString(), leaseMs: 600_000 });
  const lifecycle = new Lifecycle(store, h.clock, new Pacing(store, [SCRIPTED_PLATFORM]));
  const { taken } = await lifecycle.claim(runnerId, { limit: count, skipAccounts: new Set(), holds: async () => true, leaseNow: () => leaseNow });
  expect(taken).toHaveLength(count);
  return { h, store, lifecycle, runnerId, leaseNow, ids: taken.map((action) => action.id) };
}

describe("actions a live runner holds and does not run", () => {
  it("are run again before their commit point, failed as interrupted past it, and asked again at needs_input; a run it drives is left alone", { timeout: 60_000 }, async () => {
    const { store, lifecycle, runnerId, leaseNow, ids } = await held(4);
    const [unrun, committed, paused, driven] = ids as [string, string, string, string];
    expect(await store.actions.markCommitted(committed, { runnerId, lease: 1 }, lifecycle.now(), leaseNow)).toBe(true);
    expect(await lifecycle.move(paused, ["running"], "needs_input")).toBe(true);

    const toRun = await unrunActions(lifecycle, silentLogger, runnerId, { driven: (id) => id === driven, ranHere: () => false }, async () => true);
    expect(toRun.map((action) => [action.id, action.status, action.runner_id, action.lease])).toEqual([[unrun, "running", runnerId, 1]]);
    expect(await store.actions.get(committed)).toMatchObject({ status: "failed", error_code: "browser_error", error_message: INTERRUPTED_AFTER_COMMIT });
    expect(await store.actions.get(paused)).toMatchObject({ status: "queued" });
    expect((await store.actions.get(paused))?.runner_id).toBeUndefined();
    expect(await store.actions.get(driven)).toMatchObject({ status: "running", runner_id: runnerId });
    expect(await store.actions.get(unrun)).toMatchObject({ status: "running", runner_id: runnerId });
  });

  it("whose run ended here without its end written fail, saying whether the platform may have done it, and are not run again", { timeout: 60_000 }, async () => {
    const { store, lifecycle, runnerId, leaseNow, ids } = await held(2);
    const [before, past] = ids as [string, string];
    expect(await store.actions.markCommitted(past, { runnerId, lease: 1 }, lifecycle.now(), leaseNow)).toBe(true);
    expect(await unrunActions(lifecycle, silentLogger, runnerId, { driven: () => false, ranHere: () => true }, async () => true)).toEqual([]);
    expect(await store.actions.get(before)).toMatchObject({ status: "failed", error_code: "browser_error", error_message: `Interrupted: its run ended without its outcome recorded. ${NOTHING_DONE}` });
    expect(await store.actions.get(past)).toMatchObject({ status: "failed", error_code: "browser_error", error_message: `Interrupted: its run ended without its outcome recorded. ${MAY_HAVE_BEEN_DONE}` });
  });

  it("are left as they are once the runner's lease no longer holds: they are recovery's then", { timeout: 60_000 }, async () => {
    const { store, lifecycle, runnerId, leaseNow, ids } = await held(2);
    const [unrun, committed] = ids as [string, string];
    expect(await store.actions.markCommitted(committed, { runnerId, lease: 1 }, lifecycle.now(), leaseNow)).toBe(true);
    await unrunActions(lifecycle, silentLogger, runnerId, { driven: () => false, ranHere: () => true }, async () => false);
    expect(await store.actions.get(committed)).toMatchObject({ status: "running", runner_id: runnerId });
    expect(await store.actions.get(unrun)).toMatchObject({ status: "running", runner_id: runnerId });
  });

  it("are only the runner's own: another runner's are not touched", { timeout: 60_000 }, async () => {
    const { store, lifecycle, ids } = await held(1);
    expect(await unrunActions(lifecycle, silentLogger, "run_someone_else", { driven: () => false, ranHere: () => false }, async () => true)).toEqual([]);
    expect(await store.actions.get(ids[0]!)).toMatchObject({ status: "running", runner_id: "run_unrun" });
  });
});

describe("a run whose end cannot be written", () => {
  it("fails its action, saying nothing was done on the platform, instead of leaving it running for good; it is not run again", { timeout: 60_000 }, async () => {
    let runs = 0;
    // A driver's result the store cannot write (a BigInt has no JSON): the run's end throws.
    const executor = new ScriptedExecutor().on("post", async () => {
      runs += 1;
      return { count: 10n } as unknown as Record<string, unknown>;
    });
    const h = await createHarness({ executor });
    cleanups.push(() => h.destroy());
    const account = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "unwritable", password: "pw" } })).json.id as string;
    const created = await h.request("POST", "/v1/actions", { body: { account_id: account, type: "post", params: { text: "unwritable" } } });
    const ended = await h.request("GET", `/v1/actions/${created.json.id}?wait=20`);
    expect(ended.json).toMatchObject({ status: "failed", error: { code: "browser_error", message: `Interrupted: its run ended without its outcome recorded. ${NOTHING_DONE}` } });
    expect(runs).toBe(1);
  });
});

describe("an action the store says a live runner holds, and that runner does not run", () => {
  it("is found by the runner's heartbeat, whatever lost it, and run: never left running for good", { timeout: 60_000 }, async () => {
    const ran: string[] = [];
    const executor = new ScriptedExecutor().on("post", async (context) => {
      ran.push(context.action.id);
      return { post_url: `https://sandbox.example/p/${context.action.id}` };
    });
    // Its runner claims nothing itself: the action is put in its hands from outside, as a claim whose answer never came would leave it.
    const h = await createHarness({ executor, engine: { maxConcurrent: 0, runner: { heartbeatMs: 100 } } });
    cleanups.push(() => h.destroy());
    const account = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "held-unrun", password: "pw" } })).json.id as string;
    const created = await h.request("POST", "/v1/actions", { body: { account_id: account, type: "post", params: { text: "held, not run" } } });
    const store = await openStore(h.location, new Sealer(h.masterKey));
    cleanups.push(() => store.close());
    const runner = h.engine.core.runner;
    const lifecycle = new Lifecycle(store, h.clock, new Pacing(store, [SCRIPTED_PLATFORM]));
    const { taken } = await lifecycle.claim(runner.runnerId, { limit: 1, skipAccounts: new Set(), holds: async () => true, leaseNow: () => runner.leaseNow() });
    expect(taken.map((action) => action.id)).toEqual([created.json.id]);
    expect(runner.isRunning(created.json.id)).toBe(false);

    const ended = await h.request("GET", `/v1/actions/${created.json.id}?wait=20`);
    expect(ended.json.status, ended.raw).toBe("succeeded");
    expect(ran).toEqual([created.json.id]);
  });
});
