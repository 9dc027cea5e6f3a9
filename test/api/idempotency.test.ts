import { afterEach, describe, expect, it } from "vitest";
import { ActionFailure } from "../../src/domain/errors.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually, sleep } from "../helpers/scripted-executor.js";

let h: Harness;
afterEach(() => h.destroy());

async function account(): Promise<string> {
  return (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "alice", password: "pw" } })).json.id;
}

function holds(): number {
  return h.store.ledger.entries(h.workspaceId).filter((entry) => entry.kind === "hold").length;
}

describe("Idempotency-Key", () => {
  it("replays the stored response for the same key and body: one action, one charge", async () => {
    h = createHarness();
    const accountId = await account();
    const body = { account_id: accountId, type: "post", params: { text: "once" } };
    const first = await h.request("POST", "/v1/actions", { body, headers: { "idempotency-key": "k-1" } });
    expect(first.status).toBe(202);
    expect(first.headers.get("idempotency-replayed")).toBeNull();
    await eventually(() => h.store.actions.get(first.json.id)?.status === "succeeded");
    // Same body with its keys in another order is the same request.
    const replay = await h.request("POST", "/v1/actions", { body: { params: { text: "once" }, type: "post", account_id: accountId }, headers: { "idempotency-key": "k-1" } });
    expect(replay.status).toBe(first.status);
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    expect(replay.json).toEqual(first.json);
    expect(h.store.actions.list({ workspaceId: h.workspaceId, limit: 10 })).toHaveLength(1);
    expect(holds()).toBe(1);
  });

  it("refuses the same key with a different body (422) and changes nothing", async () => {
    h = createHarness();
    const accountId = await account();
    await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text: "a" } }, headers: { "idempotency-key": "k-2" } });
    const other = await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text: "b" } }, headers: { "idempotency-key": "k-2" } });
    expect(other.status).toBe(422);
    expect(other.json.error.code).toBe("invalid_request");
    expect(h.store.actions.list({ workspaceId: h.workspaceId, limit: 10 })).toHaveLength(1);
  });

  it("answers 409 while the first request is still in flight, then replays it", async () => {
    const executor = new ScriptedExecutor().on("post", async (context) => {
      await sleep(300, context.signal);
      return {};
    });
    h = createHarness({ executor });
    const accountId = await account();
    const body = { account_id: accountId, type: "post", params: { text: "slow" } };
    const first = h.request("POST", "/v1/actions?wait=5", { body, headers: { "idempotency-key": "k-3" } });
    await eventually(() => h.store.actions.list({ workspaceId: h.workspaceId, limit: 1 }).length === 1);
    const during = await h.request("POST", "/v1/actions?wait=5", { body, headers: { "idempotency-key": "k-3" } });
    expect(during.status).toBe(409);
    expect(during.json.error.code).toBe("conflict");
    const answered = await first;
    expect(answered.status).toBe(200);
    const after = await h.request("POST", "/v1/actions", { body, headers: { "idempotency-key": "k-3" } });
    expect(after.headers.get("idempotency-replayed")).toBe("true");
    expect(after.json.id).toBe(answered.json.id);
  });

  it("50 parallel requests with one key make one action and one hold", async () => {
    h = createHarness();
    const accountId = await account();
    const body = { account_id: accountId, type: "post", params: { text: "race" } };
    const responses = await Promise.all(Array.from({ length: 50 }, () => h.request("POST", "/v1/actions", { body, headers: { "idempotency-key": "k-race" } })));
    const ids = new Set(responses.filter((response) => response.status < 300).map((response) => response.json.id));
    expect(ids.size).toBe(1);
    for (const response of responses) expect([200, 202, 409]).toContain(response.status);
    expect(h.store.actions.list({ workspaceId: h.workspaceId, limit: 100 })).toHaveLength(1);
    expect(holds()).toBe(1);
  });

  it("runs a browser_unavailable failure again under the same key, and charges neither attempt", async () => {
    let attempts = 0;
    const executor = new ScriptedExecutor().on("post", async () => {
      attempts += 1;
      if (attempts === 1) throw new ActionFailure("browser_unavailable", "No browser could be started.");
      return { post_id: "p" };
    });
    h = createHarness({ executor });
    const accountId = await account();
    const balance = h.store.ledger.balance(h.workspaceId);
    const body = { account_id: accountId, type: "post", params: { text: "retry me" } };
    const first = await h.request("POST", "/v1/actions?wait=5", { body, headers: { "idempotency-key": "k-4" } });
    expect(first.json).toMatchObject({ status: "failed", error: { code: "browser_unavailable" }, cost: 0 });
    expect(h.store.ledger.balance(h.workspaceId)).toBe(balance);
    const retry = await h.request("POST", "/v1/actions?wait=5", { body, headers: { "idempotency-key": "k-4" } });
    expect(retry.headers.get("idempotency-replayed")).toBeNull();
    expect(retry.json.id).not.toBe(first.json.id);
    expect(retry.json.status).toBe("succeeded");
    const replay = await h.request("POST", "/v1/actions", { body, headers: { "idempotency-key": "k-4" } });
    expect(replay.json.id).toBe(retry.json.id);
    expect(h.store.ledger.balance(h.workspaceId)).toBe(balance - 2);
  });

  it("keeps a key for at least 24 hours", async () => {
    h = createHarness();
    const accountId = await account();
    const body = { account_id: accountId, type: "post", params: { text: "day" } };
    const first = await h.request("POST", "/v1/actions", { body, headers: { "idempotency-key": "k-5" } });
    h.clock.advance(24 * 3600_000 - 1_000);
    const replay = await h.request("POST", "/v1/actions", { body, headers: { "idempotency-key": "k-5" } });
    expect(replay.json.id).toBe(first.json.id);
  });
});
