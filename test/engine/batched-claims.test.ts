import { afterEach, describe, expect, it } from "vitest";
import { Lifecycle, Pacing, type PlatformInfo } from "../../src/engine/execution/index.js";
import { Sealer, openStore, type Store } from "../../src/store/index.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { SCRIPTED_PLATFORM } from "../helpers/scripted-executor.js";

// Claiming k queued actions costs a fixed number of statements (DESIGN §11 "claims are batched"),
// counted by a store of the claim's own on the same database (the harness's engine, whose runner
// takes nothing here, sends its sweeps through another).
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Posts are paced (one pace read per claim), as the real platforms' are. */
const PACED: PlatformInfo = { ...SCRIPTED_PLATFORM, paces: { post: { per_hour: 600 } } };

/** A harness whose runner claims nothing, with `k` accounts each with one queued post. */
async function queued(k: number): Promise<Harness> {
  const h = await createHarness({ engine: { maxConcurrent: 0, platforms: [PACED] } });
  cleanups.push(() => h.destroy());
  for (let i = 0; i < k; i++) {
    const account = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: `user-${i}`, password: "pw" } })).json.id as string;
    expect((await h.request("POST", "/v1/actions", { body: { account_id: account, type: "post", params: { text: `post ${i}` } } })).status).toBe(202);
  }
  return h;
}

/** A second store on the harness's database, with a live runner registered through it. */
async function claimer(h: Harness): Promise<{ store: Store; lifecycle: Lifecycle; runnerId: string; leaseNow: () => string }> {
  const store = await openStore(h.location, new Sealer(h.masterKey));
  cleanups.push(() => store.close());
  const runnerId = "run_claimer";
  const leaseNow = await store.runners.register({ id: runnerId, kind: "test", host: "test", pid: process.pid, public_url: null, internal_url: null }, { now: new Date().toISOString(), leaseMs: 600_000 });
  return { store, lifecycle: new Lifecycle(store, h.clock, new Pacing(store, [PACED])), runnerId, leaseNow: () => leaseNow };
}

/** Statements one claim of up to `k` actions sent, and what it took. */
async function claimStatements(k: number): Promise<{ statements: number; taken: number }> {
  const h = await queued(k);
  const { store, lifecycle, runnerId, leaseNow } = await claimer(h);
  const before = store.statementCount;
  const { taken } = await lifecycle.claim(runnerId, { limit: k, skipAccounts: new Set(), holds: async () => true, leaseNow });
  const statements = store.statementCount - before;
  for (const action of taken) expect(await store.actions.get(action.id)).toMatchObject({ status: "running", runner_id: runnerId, lease: 1 });
  return { statements, taken: taken.length };
}

describe("a batched claim", () => {
  it("takes k queued actions in a small number of statements that does not grow with k", { timeout: 120_000 }, async () => {
    const counts: number[] = [];
    for (const k of [1, 4, 12]) {
      const { statements, taken } = await claimStatements(k);
      expect(taken).toBe(k);
      counts.push(statements);
    }
    process.stderr.write(`statements per claim of 1, 4, 12 actions: ${counts.join(", ")}\n`);
    expect(counts[1]).toBe(counts[0]);
    expect(counts[2]).toBe(counts[0]);
    expect(counts[0]).toBeLessThanOrEqual(8);
  });

  it("says whether claimable work was left once its limit was reached: the others are woken only then", { timeout: 60_000 }, async () => {
    const h = await queued(3);
    const { lifecycle, runnerId, leaseNow } = await claimer(h);
    const claim = (limit: number) => lifecycle.claim(runnerId, { limit, skipAccounts: new Set(), holds: async () => true, leaseNow });
    const first = await claim(2);
    expect(first.taken).toHaveLength(2);
    expect(first.more).toBe(true);
    // The one left was only looked at: still queued, and the next claim takes it.
    const last = await claim(2);
    expect(last.taken).toHaveLength(1);
    expect(last.more).toBe(false);
    expect((await claim(1)).more).toBe(false);
  });

  it("looking first (a slot a run freed) costs one read without a transaction when nothing waits, and claims what does", { timeout: 60_000 }, async () => {
    const h = await queued(1);
    const { store, lifecycle, runnerId, leaseNow } = await claimer(h);
    const claim = async (lookFirst: boolean, skipAccounts = new Set<string>()) => {
      const before = store.statementCount;
      const { taken } = await lifecycle.claim(runnerId, { limit: 2, skipAccounts, holds: async () => true, leaseNow, lookFirst });
      return { statements: store.statementCount - before, taken: taken.length };
    };
    const [waiting] = await store.actions.list({ workspaceId: h.workspaceId, status: "queued", limit: 10 });
    // Its account busy here: nothing it may claim. Looking first is one statement; a claim is BEGIN, the read, COMMIT.
    expect(await claim(true, new Set([waiting!.account_id]))).toEqual({ statements: 1, taken: 0 });
    expect(await claim(false, new Set([waiting!.account_id]))).toEqual({ statements: 3, taken: 0 });
    // The account free (its run ended): the look finds the action, and the claim takes it.
    expect((await claim(true)).taken).toBe(1);
    expect(await store.actions.get(waiting!.id)).toMatchObject({ status: "running", runner_id: runnerId });
    expect(await claim(true)).toEqual({ statements: 1, taken: 0 });
  });
});
