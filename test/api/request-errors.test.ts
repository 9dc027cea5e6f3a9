import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually, sleep } from "../helpers/scripted-executor.js";
import { rows, sql } from "../helpers/sql.js";

let h: Harness;
let accountId: string;
let finishedAction: string;

beforeAll(async () => {
  const executor = new ScriptedExecutor().on("connect", async (context) => {
    await sleep(60_000, context.signal);
    return {};
  });
  h = await createHarness({ executor });
  accountId = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "alice", password: "pw" } })).json.id;
  finishedAction = (await h.request("POST", "/v1/actions?wait=5", { body: { account_id: accountId, type: "post", params: { text: "done" } } })).json.id;
});
afterAll(() => h.destroy());

/** The database's rows: a request error must leave them exactly as they were. */
async function snapshot(): Promise<unknown> {
  const tables = ["workspaces", "accounts", "actions", "challenges", "credit_ledger", "idempotency_keys"];
  return Promise.all(tables.map((table) => rows(h.store, sql`SELECT * FROM ${sql.table(table)} ORDER BY 1`)));
}

async function expectError(
  status: number,
  code: string,
  method: string,
  path: string,
  options?: Parameters<Harness["request"]>[2],
): Promise<Awaited<ReturnType<Harness["request"]>>> {
  const before = await snapshot();
  const response = await h.request(method, path, options);
  expect(response.status, response.raw).toBe(status);
  expect(response.json.error.code).toBe(code);
  expect(response.json.error.message).toBeTypeOf("string");
  expect(await snapshot()).toEqual(before);
  return response;
}

describe("request errors create nothing and change nothing", () => {
  it("400 for bad JSON and for a body over the size limit", async () => {
    await expectError(400, "malformed_request", "POST", "/v1/actions", { rawBody: "{not json" });
    await expectError(400, "malformed_request", "POST", "/v1/accounts", { rawBody: "" });
    await expectError(400, "malformed_request", "PATCH", `/v1/accounts/${accountId}`, { rawBody: '{"username": ' });
    await expectError(400, "malformed_request", "POST", `/v1/actions/${finishedAction}/answer`, { rawBody: "[1," });
    const huge = JSON.stringify({ account_id: accountId, type: "post", params: { text: "x".repeat(2 * 1024 * 1024) } });
    await expectError(400, "malformed_request", "POST", "/v1/actions", { rawBody: huge });
  });

  it("401 for a missing, malformed or unknown key", async () => {
    for (const [method, path] of [
      ["GET", "/v1/actions"],
      ["POST", "/v1/actions"],
      ["GET", `/v1/accounts/${accountId}`],
      ["GET", "/v1/credits"],
      ["GET", "/v1/platforms"],
    ] as const) {
      await expectError(401, "unauthorized", method, path, { key: null });
      await expectError(401, "unauthorized", method, path, { key: "as_not-a-real-key" });
      await expectError(401, "unauthorized", method, path, { key: null, headers: { authorization: "Basic abc" } });
    }
  });

  it("403 for a read-only key acting, an operator managing accounts, and an account outside the allow-list", async () => {
    const readOnly = await h.key("read_only");
    await expectError(403, "forbidden", "POST", "/v1/actions", { key: readOnly, body: { account_id: accountId, type: "post", params: { text: "no" } } });
    await expectError(403, "forbidden", "POST", `/v1/actions/${finishedAction}/cancel`, { key: readOnly });
    await expectError(403, "forbidden", "POST", "/v1/accounts", { key: readOnly, body: { platform: "sandbox", username: "x" } });
    expect((await h.request("GET", `/v1/actions/${finishedAction}`, { key: readOnly })).status).toBe(200);

    const operator = await h.key("operator");
    await expectError(403, "forbidden", "DELETE", `/v1/accounts/${accountId}`, { key: operator });
    await expectError(403, "forbidden", "PATCH", `/v1/accounts/${accountId}`, { key: operator, body: { password: "new" } });

    const other = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "bob" } })).json.id;
    const limited = await h.key("operator", { accountIds: [other] });
    await expectError(403, "forbidden", "POST", "/v1/actions", { key: limited, body: { account_id: accountId, type: "post", params: { text: "no" } } });
    await expectError(403, "forbidden", "GET", `/v1/accounts/${accountId}`, { key: limited });
    await expectError(403, "forbidden", "GET", `/v1/actions/${finishedAction}`, { key: limited });
    const visible = await h.request("GET", "/v1/accounts", { key: limited });
    expect(visible.json.data.map((account: { id: string }) => account.id)).toEqual([other]);
    const actions = await h.request("GET", "/v1/actions", { key: limited });
    expect(actions.json.data).toEqual([]);
  });

  it("404 for another workspace's account or action, and for ids that name nothing", async () => {
    const stranger = await h.key("admin", { workspace: "someone-else" });
    await expectError(404, "not_found", "GET", `/v1/accounts/${accountId}`, { key: stranger });
    await expectError(404, "not_found", "GET", `/v1/actions/${finishedAction}`, { key: stranger });
    await expectError(404, "not_found", "POST", `/v1/actions/${finishedAction}/cancel`, { key: stranger });
    await expectError(404, "not_found", "POST", `/v1/actions/${finishedAction}/answer`, { key: stranger, body: { answer: "1" } });
    await expectError(404, "not_found", "POST", "/v1/actions", { key: stranger, body: { account_id: accountId, type: "post", params: { text: "x" } } });
    await expectError(404, "not_found", "DELETE", `/v1/accounts/${accountId}`, { key: stranger });
    await expectError(404, "not_found", "GET", "/v1/actions/act_doesnotexist");
    await expectError(404, "not_found", "GET", "/v1/accounts/%27%3B%20DROP%20TABLE%20accounts");
    await expectError(404, "not_found", "GET", "/v1/nothing-here");
  });

  it("409 for an answer when not needs_input and a cancel of a terminal action", async () => {
    await expectError(409, "conflict", "POST", `/v1/actions/${finishedAction}/answer`, { body: { answer: "123456" } });
    await expectError(409, "conflict", "POST", `/v1/actions/${finishedAction}/cancel`);
    const running = (await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "connect" } })).json.id;
    // Running (not still queued): the claim would change the rows the refused answer must leave alone.
    await eventually(async () => (await h.store.actions.get(running))?.status === "running");
    await expectError(409, "conflict", "POST", `/v1/actions/${running}/answer`, { body: { answer: "123456" } });
    await h.request("POST", `/v1/actions/${running}/cancel`);
  });

  it("422 for bad params, wrong types, unknown fields and out-of-range query values", async () => {
    const bad: unknown[] = [
      {},
      { account_id: accountId },
      { account_id: accountId, type: "dance" },
      { account_id: accountId, type: "post" },
      { account_id: accountId, type: "post", params: { text: "" } },
      { account_id: accountId, type: "post", params: { text: 42 } },
      { account_id: accountId, type: "post", params: { text: "hi", extra: true } },
      { account_id: accountId, type: "post", params: { text: "hi" }, surprise: 1 },
      { account_id: accountId, type: "lookup_person", params: {} },
      { account_id: accountId, type: "lookup_person", params: { url: "not a url" } },
      { account_id: accountId, type: "browser_steps", params: { steps: [] } },
      { account_id: accountId, type: "browser_steps", params: { steps: [{ teleport: "x" }] } },
      { account_id: 12, type: "post", params: { text: "hi" } },
      [],
      "post",
      null,
    ];
    for (const body of bad) {
      const response = await expectError(422, "invalid_request", "POST", "/v1/actions", { body });
      expect(response.json.error.details.issues.length).toBeGreaterThan(0);
    }
    await expectError(422, "invalid_request", "POST", "/v1/accounts", { body: { platform: "myspace", username: "x" } });
    await expectError(422, "invalid_request", "POST", "/v1/accounts", { body: { platform: "sandbox", username: "x", totp_secret: "not base32!" } });
    await expectError(422, "invalid_request", "POST", "/v1/accounts", { body: { platform: "sandbox", username: "x", admin: true } });
    await expectError(422, "invalid_request", "PATCH", `/v1/accounts/${accountId}`, { body: {} });
    await expectError(422, "invalid_request", "PATCH", `/v1/accounts/${accountId}`, { body: { password: 123 } });
    await expectError(422, "invalid_request", "POST", `/v1/actions/${finishedAction}/answer`, { body: { answer: "" } });
    await expectError(422, "invalid_request", "POST", `/v1/actions/${finishedAction}/answer`, { body: { code: "1" } });
    await expectError(422, "invalid_request", "GET", `/v1/actions/${finishedAction}?wait=31`);
    await expectError(422, "invalid_request", "GET", `/v1/actions/${finishedAction}?wait=soon`);
    await expectError(422, "invalid_request", "GET", "/v1/actions?limit=0");
    await expectError(422, "invalid_request", "GET", "/v1/actions?status=sleeping");
    await expectError(422, "invalid_request", "GET", "/v1/actions?cursor=bm9wZQ");
    await expectError(422, "invalid_request", "GET", "/v1/actions?colour=blue");
    await expectError(422, "invalid_request", "POST", "/v1/actions", {
      body: { account_id: accountId, type: "post", params: { text: "k" } },
      headers: { "idempotency-key": "k".repeat(256) },
    });
  });

  it("a failed action is a normal 200 with status and error", async () => {
    const response = await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "browser_steps", params: { steps: [{ goto: "https://example.com" }] } } });
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ status: "failed", error: { code: "unsupported" }, cost: 0 });
  });
});

describe("rate limit", () => {
  it("answers 429 with Retry-After once a key spends its budget, and only for that key", async () => {
    const limited = await createHarness({ app: { rateLimitPerMinute: 5 } });
    try {
      for (let i = 0; i < 5; i++) expect((await limited.request("GET", "/v1/credits")).status).toBe(200);
      const refused = await limited.request("GET", "/v1/credits");
      expect(refused.status).toBe(429);
      expect(refused.json.error.code).toBe("too_many_requests");
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect((await limited.request("GET", "/v1/credits", { key: await limited.key("read_only") })).status).toBe(200);
      limited.clock.advance(Number(refused.headers.get("retry-after")) * 1000);
      expect((await limited.request("GET", "/v1/credits")).status).toBe(200);
    } finally {
      await limited.destroy();
    }
  });
});
