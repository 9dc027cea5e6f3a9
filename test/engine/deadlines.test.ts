import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually, sleep } from "../helpers/scripted-executor.js";
import { copyAsLeftByACrash } from "../helpers/database.js";
import type { StoreLocation } from "../../src/store/index.js";

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.destroy();
});

function challengeScript(): ScriptedExecutor {
  return new ScriptedExecutor()
    .on("connect", async (context) => {
      await context.challenge({ kind: "email_code", message: "We emailed you a code." });
      return { signed_in: true };
    })
    .on("post", async (context) => {
      await sleep(60_000, context.signal);
      return {};
    });
}

async function pausedAction(h: Harness): Promise<{ accountId: string; actionId: string; expiresAt: string }> {
  const account = await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "carol", password: "pw" } });
  const action = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: account.json.id, type: "connect" } });
  expect(action.json.status).toBe("needs_input");
  return { accountId: account.json.id, actionId: action.json.id, expiresAt: action.json.challenge.expires_at };
}

describe("challenge deadlines", () => {
  it("fails an unanswered challenge with challenge_timeout once the clock passes expires_at", async () => {
    const h = await createHarness({ executor: challengeScript() });
    harnesses.push(h);
    const { actionId } = await pausedAction(h);
    h.clock.advance(599_000);
    expect(await h.engine.expireOverdueChallenges()).toBe(0);
    expect((await h.request("GET", `/v1/actions/${actionId}`)).json.status).toBe("needs_input");
    h.clock.advance(1_000);
    // The engine's own sweep notices without being called.
    await eventually(async () => (await h.store.actions.get(actionId))?.status === "failed");
    const failed = await h.request("GET", `/v1/actions/${actionId}`);
    expect(failed.status).toBe(200);
    expect(failed.json).toMatchObject({ status: "failed", error: { code: "challenge_timeout" } });
    expect(failed.json).not.toHaveProperty("challenge");
    expect((await h.store.challenges.latestOf(actionId))?.state).toBe("expired");
    const late = await h.request("POST", `/v1/actions/${actionId}/answer`, { body: { answer: "123456" } });
    expect(late.status).toBe(409);
  });

});

describe("restart recovery", () => {
  /**
   * Simulates a process that died: a consistent copy of its database, taken while its
   * actions are mid-flight, is what the next process finds.
   */
  async function crash(h: Harness): Promise<{ dir: string; location: StoreLocation }> {
    const dir = mkdtempSync(join(tmpdir(), "action-service-crash-"));
    const location = await copyAsLeftByACrash(h.store, dir);
    await h.destroy();
    return { dir, location };
  }

  it("a needs_input action whose deadline passed while down fails with challenge_timeout", async () => {
    const first = await createHarness({ executor: challengeScript() });
    const { actionId } = await pausedAction(first);
    const { dir, location } = await crash(first);
    first.clock.advance(601_000);
    const second = await createHarness({ executor: challengeScript(), dir, location, masterKey: first.masterKey, clock: first.clock, adminKey: first.adminKey });
    harnesses.push(second);
    const action = await second.request("GET", `/v1/actions/${actionId}`);
    expect(action.json).toMatchObject({ status: "failed", error: { code: "challenge_timeout" } });
  });

  it("a dead process's actions are recovered once its lease expires: re-run before the commit point, failed past it, queued ones run", async () => {
    // Short leases, so the simulated crash is noticed quickly (the dead runner is this same process).
    const runner = { leaseMs: 300, heartbeatMs: 50, stopGraceMs: 100 };
    const script = (): ScriptedExecutor =>
      challengeScript().on("send_message", async (context) => {
        await context.commit();
        await sleep(60_000, context.signal);
        return {};
      });
    const first = await createHarness({ executor: script(), engine: { runner } });
    const { accountId, actionId: waiting } = await pausedAction(first);
    const firstChallenge = (await first.store.challenges.latestOf(waiting))!.id;
    const other = (await first.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "dave" } })).json.id;
    const third = (await first.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "erin" } })).json.id;
    const running = (await first.request("POST", "/v1/actions", { body: { account_id: other, type: "post", params: { text: "x" } } })).json.id;
    const committed = (await first.request("POST", "/v1/actions", { body: { account_id: third, type: "send_message", params: { to: "bob", text: "hi" } } })).json.id;
    const queued = (await first.request("POST", "/v1/actions", { body: { account_id: accountId, type: "lookup_person", params: { handle: "bob" } } })).json.id;
    await eventually(async () => (await first.store.actions.get(running))?.status === "running" && (await first.store.actions.get(committed))?.committed_at !== undefined);
    const { dir, location } = await crash(first);

    const executor = script();
    // The dead runner's lease was short; the live one's is not, so a slow machine never takes its actions from it.
    const second = await createHarness({ executor, dir, location, masterKey: first.masterKey, clock: first.clock, adminKey: first.adminKey, engine: { runner: { ...runner, leaseMs: 10_000 } } });
    harnesses.push(second);
    // Before its commit point: back in the queue and run again; the paused one asks afresh.
    await eventually(async () => (await second.store.actions.get(waiting))?.status === "needs_input" && executor.started.includes(running));
    expect((await second.store.challenges.latestOf(waiting))!.id).not.toBe(firstChallenge);
    expect((await second.store.actions.get(running))?.status).toBe("running");
    // Past it: failed, saying the platform may already have done it.
    const failed = (await second.request("GET", `/v1/actions/${committed}`)).json;
    expect(failed).toMatchObject({ status: "failed", error: { code: "browser_error" } });
    expect(failed.error.message).toContain("may already have done it");
    expect(executor.started).not.toContain(committed);
    // The account's queued action waits behind the paused one, as before the crash.
    expect((await second.store.actions.get(queued))?.status).toBe("queued");
    await second.request("POST", `/v1/actions/${waiting}/answer`, { body: { answer: "123456" } });
    await eventually(async () => (await second.store.actions.get(queued))?.status === "succeeded");
    expect(await second.store.ledger.sum(second.workspaceId)).toBe(await second.store.ledger.balance(second.workspaceId));
  });
});
