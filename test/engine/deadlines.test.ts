import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually, sleep } from "../helpers/scripted-executor.js";

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
    const h = createHarness({ executor: challengeScript() });
    harnesses.push(h);
    const { actionId } = await pausedAction(h);
    h.clock.advance(599_000);
    expect(h.engine.expireOverdueChallenges()).toBe(0);
    expect((await h.request("GET", `/v1/actions/${actionId}`)).json.status).toBe("needs_input");
    h.clock.advance(1_000);
    // The engine's own sweep notices without being called.
    await eventually(() => h.store.actions.get(actionId)?.status === "failed");
    const failed = await h.request("GET", `/v1/actions/${actionId}`);
    expect(failed.status).toBe(200);
    expect(failed.json).toMatchObject({ status: "failed", error: { code: "challenge_timeout" } });
    expect(failed.json).not.toHaveProperty("challenge");
    expect(h.store.challenges.latestOf(actionId)?.state).toBe("expired");
    const late = await h.request("POST", `/v1/actions/${actionId}/answer`, { body: { answer: "123456" } });
    expect(late.status).toBe(409);
  });

});

describe("restart recovery", () => {
  /**
   * Simulates a process that died: a consistent copy of its database, taken while its
   * actions are mid-flight, is what the next process finds.
   */
  async function crash(h: Harness): Promise<string> {
    const dir = mkdtempSync(join(tmpdir(), "action-service-crash-"));
    await h.store.db.backup(join(dir, "action-service.db"));
    await h.destroy();
    return dir;
  }

  it("a needs_input action whose deadline passed while down fails with challenge_timeout", async () => {
    const first = createHarness({ executor: challengeScript() });
    const { actionId } = await pausedAction(first);
    const dir = await crash(first);
    first.clock.advance(601_000);
    const second = createHarness({ executor: challengeScript(), dir, masterKey: first.masterKey, clock: first.clock, adminKey: first.adminKey });
    harnesses.push(second);
    const action = await second.request("GET", `/v1/actions/${actionId}`);
    expect(action.json).toMatchObject({ status: "failed", error: { code: "challenge_timeout" } });
  });

  it("running and waiting actions of a dead process fail with browser_error and are not re-run; queued ones run", async () => {
    const first = createHarness({ executor: challengeScript() });
    const { accountId, actionId: waiting } = await pausedAction(first);
    const other = (await first.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "dave" } })).json.id;
    const running = (await first.request("POST", "/v1/actions", { body: { account_id: other, type: "post", params: { text: "x" } } })).json.id;
    const queued = (await first.request("POST", "/v1/actions", { body: { account_id: accountId, type: "lookup_person", params: { handle: "bob" } } })).json.id;
    await eventually(() => first.store.actions.get(running)?.status === "running");
    const dir = await crash(first);

    const executor = challengeScript();
    const second = createHarness({ executor, dir, masterKey: first.masterKey, clock: first.clock, adminKey: first.adminKey });
    harnesses.push(second);
    for (const id of [waiting, running]) {
      const action = (await second.request("GET", `/v1/actions/${id}`)).json;
      expect(action).toMatchObject({ status: "failed", error: { code: "browser_error" } });
      expect(action.error.message).toContain("restart");
    }
    await eventually(() => second.store.actions.get(queued)?.status === "succeeded");
    expect(executor.started).toEqual([queued]);
    expect(second.store.ledger.sum(second.workspaceId)).toBe(second.store.ledger.balance(second.workspaceId));
  });
});
