import { afterEach, describe, expect, it } from "vitest";
import { ACTION_ERROR_CODES, ActionFailure, type ActionErrorCode } from "../../src/domain/errors.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually } from "../helpers/scripted-executor.js";

let h: Harness;
afterEach(() => h.destroy());

/** Both read in one transaction: the runner may finish an action (and release its hold) between two reads. */
async function ledgerMatchesBalance(): Promise<void> {
  const [balance, sum] = await h.store.transaction(async () => [await h.store.ledger.balance(h.workspaceId), await h.store.ledger.sum(h.workspaceId)]);
  expect(sum).toBe(balance);
  expect(balance).toBeGreaterThanOrEqual(0);
}

/** A tiny deterministic generator, so a failing sequence can be replayed. */
function random(seed: number): () => number {
  return () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

describe("credits", () => {
  it("start at ACTION_SERVICE_FREE_CREDITS for a new workspace", async () => {
    h = await createHarness({ engine: { freeCredits: 7 } });
    expect((await h.request("GET", "/v1/credits")).json).toEqual({ balance: 7 });
    const other = await h.key("admin", { workspace: "second" });
    expect((await h.request("GET", "/v1/credits", { key: other })).json).toEqual({ balance: 7 });
  });

  it("insufficient_credits creates a failed action that costs nothing", async () => {
    h = await createHarness({ engine: { freeCredits: 3 } });
    const accountId = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "a" } })).json.id;
    const ok = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: accountId, type: "post", params: { text: "1" } } });
    expect(ok.json).toMatchObject({ status: "succeeded", cost: 2 });
    const poor = await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text: "2" } } });
    expect(poor.status).toBe(200);
    expect(poor.json).toMatchObject({ status: "failed", error: { code: "insufficient_credits" }, cost: 0 });
    expect((await h.request("GET", "/v1/credits")).json.balance).toBe(1);
    await ledgerMatchesBalance();
  });

  it("after any sequence of outcomes the ledger sums to the balance, which never goes below zero", async () => {
    const next = random(42);
    const outcomes: (ActionErrorCode | "ok")[] = ["ok", ...ACTION_ERROR_CODES];
    const executor = new ScriptedExecutor(async (context) => {
      const outcome = context.action.params.text as string;
      if (outcome.startsWith("ok")) return { done: true };
      throw new ActionFailure(outcome.split(":")[0] as ActionErrorCode);
    });
    h = await createHarness({ executor, engine: { freeCredits: 40 } });
    const accounts = [];
    for (let i = 0; i < 3; i++) accounts.push((await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: `u${i}` } })).json.id);
    const expected = new Map<string, number>();
    for (let i = 0; i < 60; i++) {
      const outcome = outcomes[Math.floor(next() * outcomes.length)]!;
      const account = accounts[Math.floor(next() * accounts.length)]!;
      const response = await h.request("POST", "/v1/actions", { body: { account_id: account, type: "post", params: { text: `${outcome}:${i}` } } });
      if (next() < 0.2 && response.json.status !== "failed") await h.request("POST", `/v1/actions/${response.json.id}/cancel`);
      expected.set(response.json.id, 0);
      await ledgerMatchesBalance();
    }
    // A rate_limited outcome cools its account's later posts down (DESIGN §16): time moves past each cool-down.
    await eventually(async () => {
      h.clock.advance(25 * 3_600_000);
      h.engine.core.runner.pump();
      return (await h.store.actions.withStatus(["queued", "running", "needs_input"])).length === 0;
    });
    await ledgerMatchesBalance();
    const all = await h.store.actions.list({ workspaceId: h.workspaceId, limit: 100 });
    const spent = all.reduce((sum, action) => sum + action.cost, 0);
    expect(await h.store.ledger.balance(h.workspaceId)).toBe(40 - spent);
    for (const action of all) {
      const free = action.status === "canceled" || ["browser_unavailable", "insufficient_credits", "invalid_input", "unsupported"].includes(action.error_code ?? "");
      expect(action.cost, `${action.status} ${action.error_code}`).toBe(free ? 0 : action.price);
    }
    expect(all.some((action) => action.error_code === "insufficient_credits")).toBe(true);
  });
});
