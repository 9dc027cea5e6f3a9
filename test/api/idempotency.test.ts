import { afterEach, describe, expect, it } from "vitest";
import { ActionFailure } from "../../src/domain/errors.js";
import { claimKey } from "../../src/engine/idempotency.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually, sleep } from "../helpers/scripted-executor.js";
import { countRows, rows as allRows, sql } from "../helpers/sql.js";

let h: Harness;
afterEach(() => h.destroy());

async function account(): Promise<string> {
  return (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "alice", password: "pw" } })).json.id;
}

async function holds(): Promise<number> {
  return (await h.store.ledger.entries(h.workspaceId)).filter((entry) => entry.kind === "hold").length;
}

describe("Idempotency-Key", () => {
  it("replays the stored response for the same key and body: one action, one charge", async () => {
    h = await createHarness();
    const accountId = await account();
    const body = { account_id: accountId, type: "post", params: { text: "once" } };
    const first = await h.request("POST", "/v1/actions", { body, headers: { "idempotency-key": "k-1" } });
    expect(first.status).toBe(202);
    expect(first.headers.get("idempotency-replayed")).toBeNull();
    await eventually(async () => (await h.store.actions.get(first.json.id))?.status === "succeeded");
    // Same body with its keys in another order is the same request.
    const replay = await h.request("POST", "/v1/actions", { body: { params: { text: "once" }, type: "post", account_id: accountId }, headers: { "idempotency-key": "k-1" } });
    // The replay is the action as it is now (it has ended since), not a stored copy.
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    expect(replay.json).toEqual((await h.request("GET", `/v1/actions/${first.json.id}`)).json);
    expect(await h.store.actions.list({ workspaceId: h.workspaceId, limit: 10 })).toHaveLength(1);
    expect(await holds()).toBe(1);
  });

  it("claims a new key in one statement; a key with a live record is looked at, and what it holds answered", async () => {
    // No timer of its own sends anything meanwhile (heartbeat, sweeps, health checks), and what its start sent is over.
    h = await createHarness({ engine: { sweepIntervalMs: 600_000, runner: { heartbeatMs: 600_000, leaseMs: 1_200_000 }, healthChecks: { intervalMinutes: 0 } } });
    await eventually(async () => {
      const count = h.store.statementCount;
      await sleep(500);
      return h.store.statementCount === count;
    }, { what: "the service to fall quiet" });
    const core = h.engine.core;
    const before = h.store.statementCount;
    expect(await claimKey(core, h.workspaceId, "k-new", "hash-1", () => "replayed")).toBeUndefined();
    // The old code: BEGIN, a read of the key, its insert, COMMIT.
    expect(h.store.statementCount - before).toBe(1);
    expect(await claimKey(core, h.workspaceId, "k-new", "hash-1", () => "replayed")).toBe("replayed");
    await expect(claimKey(core, h.workspaceId, "k-new", "hash-2", () => "replayed")).rejects.toMatchObject({ code: "invalid_request" });
    // A record with nothing to replay any more is claimed again.
    expect(await claimKey(core, h.workspaceId, "k-new", "hash-1", () => undefined)).toBeUndefined();
  });

  it("refuses the same key with a different body (422) and changes nothing", async () => {
    h = await createHarness();
    const accountId = await account();
    await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text: "a" } }, headers: { "idempotency-key": "k-2" } });
    const other = await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text: "b" } }, headers: { "idempotency-key": "k-2" } });
    expect(other.status).toBe(422);
    expect(other.json.error.code).toBe("invalid_request");
    expect(await h.store.actions.list({ workspaceId: h.workspaceId, limit: 10 })).toHaveLength(1);
  });

  it("answers 409 while the first request is still in flight, then replays it", async () => {
    const executor = new ScriptedExecutor().on("post", async (context) => {
      await sleep(300, context.signal);
      return {};
    });
    h = await createHarness({ executor });
    const accountId = await account();
    const body = { account_id: accountId, type: "post", params: { text: "slow" } };
    const first = h.request("POST", "/v1/actions?wait=5", { body, headers: { "idempotency-key": "k-3" } });
    await eventually(async () => (await h.store.actions.list({ workspaceId: h.workspaceId, limit: 1 })).length === 1);
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
    h = await createHarness();
    const accountId = await account();
    const body = { account_id: accountId, type: "post", params: { text: "race" } };
    const responses = await Promise.all(Array.from({ length: 50 }, () => h.request("POST", "/v1/actions", { body, headers: { "idempotency-key": "k-race" } })));
    const ids = new Set(responses.filter((response) => response.status < 300).map((response) => response.json.id));
    expect(ids.size).toBe(1);
    for (const response of responses) expect([200, 202, 409]).toContain(response.status);
    expect(await h.store.actions.list({ workspaceId: h.workspaceId, limit: 100 })).toHaveLength(1);
    expect(await holds()).toBe(1);
  });

  it("runs a browser_unavailable failure again under the same key, and charges neither attempt", async () => {
    let attempts = 0;
    const executor = new ScriptedExecutor().on("post", async () => {
      attempts += 1;
      if (attempts === 1) throw new ActionFailure("browser_unavailable", "No browser could be started.");
      return { post_id: "p" };
    });
    h = await createHarness({ executor });
    const accountId = await account();
    const balance = await h.store.ledger.balance(h.workspaceId);
    const body = { account_id: accountId, type: "post", params: { text: "retry me" } };
    const first = await h.request("POST", "/v1/actions?wait=5", { body, headers: { "idempotency-key": "k-4" } });
    expect(first.json).toMatchObject({ status: "failed", error: { code: "browser_unavailable" }, cost: 0 });
    expect(await h.store.ledger.balance(h.workspaceId)).toBe(balance);
    const retry = await h.request("POST", "/v1/actions?wait=5", { body, headers: { "idempotency-key": "k-4" } });
    expect(retry.headers.get("idempotency-replayed")).toBeNull();
    expect(retry.json.id).not.toBe(first.json.id);
    expect(retry.json.status).toBe("succeeded");
    const replay = await h.request("POST", "/v1/actions", { body, headers: { "idempotency-key": "k-4" } });
    expect(replay.json.id).toBe(retry.json.id);
    expect(await h.store.ledger.balance(h.workspaceId)).toBe(balance - 2);
  });

  it("keeps a key for at least 24 hours", async () => {
    h = await createHarness();
    const accountId = await account();
    const body = { account_id: accountId, type: "post", params: { text: "day" } };
    const first = await h.request("POST", "/v1/actions", { body, headers: { "idempotency-key": "k-5" } });
    h.clock.advance(24 * 3600_000 - 1_000);
    const replay = await h.request("POST", "/v1/actions", { body, headers: { "idempotency-key": "k-5" } });
    expect(replay.json.id).toBe(first.json.id);
  });

  it("checks a replay like any request: a read_only key, or one limited to other accounts, gets 403 and not the action", async () => {
    const executor = new ScriptedExecutor().on("post", async (context) => (await context.challenge({ kind: "email_code", message: "Enter the code." })) ? {} : {});
    h = await createHarness({ executor });
    const accountId = await account();
    const other = await account();
    const body = { account_id: accountId, type: "post", params: { text: "mine" } };
    const headers = { "idempotency-key": "k-shared" };
    const first = await h.request("POST", "/v1/actions?wait=5", { body, headers });
    expect(first.json.status).toBe("needs_input");
    const link = first.json.challenge.sign_in_url as string;
    for (const key of [await h.key("read_only"), await h.key("operator", { accountIds: [other] })]) {
      const replay = await h.request("POST", "/v1/actions", { key, body, headers });
      expect(replay.status).toBe(403);
      expect(replay.json.error.code).toBe("forbidden");
      expect(replay.raw).not.toContain(first.json.id);
      expect(replay.raw).not.toContain(link.split("/live/")[1]);
    }
    // A key that may act on the account replays it, as it is now.
    const operator = await h.request("POST", "/v1/actions", { key: await h.key("operator", { accountIds: [accountId] }), body, headers });
    expect(operator.status).toBe(202);
    expect(operator.json).toMatchObject({ id: first.json.id, status: "needs_input", challenge: { sign_in_url: link } });
  });

  it("refuses deeply nested bodies before hashing them, with or without a key, and changes nothing", async () => {
    h = await createHarness();
    const accountId = await account();
    const deep = "[".repeat(5_000) + "]".repeat(5_000);
    const rawBody = `{"account_id":"${accountId}","type":"post","params":{"text":"x","deep":${deep}}}`;
    for (const headers of [{ "idempotency-key": "k-deep" }, {}] as Record<string, string>[]) {
      const response = await h.request("POST", "/v1/actions", { rawBody, headers });
      expect(response.status).toBe(400);
      expect(response.json.error.code).toBe("malformed_request");
    }
    // Within the body limit of depth but too deep inside params: a 422 naming params.
    let nested: unknown = "leaf";
    for (let i = 0; i < 20; i++) nested = { inner: nested };
    const inParams = await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text: "x", nested } }, headers: { "idempotency-key": "k-deep-2" } });
    expect(inParams.status).toBe(422);
    expect(await h.store.actions.list({ workspaceId: h.workspaceId, limit: 10 })).toHaveLength(0);
    expect(await countRows(h.store, "idempotency_keys")).toBe(0);
  });

  it("keeps no response at rest: the record names the action, and the live-link token is nowhere in it", async () => {
    const executor = new ScriptedExecutor().on("post", async (context) => (await context.challenge({ kind: "email_code", message: "Enter the code." })) ? {} : {});
    h = await createHarness({ executor });
    const accountId = await account();
    const first = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: accountId, type: "post", params: { text: "t" } }, headers: { "idempotency-key": "k-rest" } });
    const token = (first.json.challenge.sign_in_url as string).split("/live/")[1]!;
    const rows = await allRows(h.store, sql`SELECT * FROM idempotency_keys`);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ action_id: first.json.id, state: "done", response_body: null });
    expect(JSON.stringify(rows)).not.toContain(token);
  });

  it("purges records once their 24 hours are over", async () => {
    h = await createHarness();
    const accountId = await account();
    await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text: "old" } }, headers: { "idempotency-key": "k-old" } });
    const count = (): Promise<number> => countRows(h.store, "idempotency_keys");
    expect(await count()).toBe(1);
    h.clock.advance(24 * 3600_000 + 1_000);
    await h.stop();
    // A start purges what has expired (and so does a timer every few minutes).
    const again = await createHarness({ dir: h.dir, location: h.location, masterKey: h.masterKey, clock: h.clock, adminKey: h.adminKey });
    h = again;
    expect(await count()).toBe(0);
  });
});

