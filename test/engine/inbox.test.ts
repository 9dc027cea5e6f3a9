import { afterEach, describe, expect, it } from "vitest";
import type { ExecutionContext } from "../../src/engine/execution/index.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually } from "../helpers/scripted-executor.js";

// The inbox's rules of matching (DESIGN §15) on the real engine and store (SQLite here; PostgreSQL
// under test:postgres), the platform scripted: the script asks for an email_code and returns the
// answer it got, so a test sees exactly what the inbox typed.
let h: Harness;

afterEach(async () => {
  await h?.destroy();
});

function codeScript(): ScriptedExecutor {
  return new ScriptedExecutor().on("connect", async (context: ExecutionContext) => {
    const answer = await context.challenge({ kind: "email_code", message: "Enter the code we sent to c***@example.com." });
    return { answer: answer ?? null };
  });
}

async function setUp(): Promise<string> {
  h = await createHarness({ executor: codeScript() });
  const account = await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "carol", password: "pw" } });
  return account.json.id;
}

async function start(accountId: string): Promise<string> {
  const created = await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "connect", params: {} } });
  return created.json.id;
}

async function connect(accountId: string): Promise<string> {
  const actionId = await start(accountId);
  await eventually(async () => (await h.request("GET", `/v1/actions/${actionId}`)).json.status === "needs_input");
  return actionId;
}

async function push(accountId: string, text: string, channel = "email"): Promise<{ id: string; used_for?: string }> {
  const response = await h.request("POST", `/v1/accounts/${accountId}/messages`, { body: { channel, text } });
  expect(response.status).toBe(202);
  return response.json;
}

async function ended(actionId: string): Promise<{ status: string; answered_by?: string; result?: { answer: string } }> {
  return eventually(async () => {
    const action = (await h.request("GET", `/v1/actions/${actionId}`)).json;
    return action.status === "succeeded" || action.status === "failed" ? action : undefined;
  });
}

describe("the inbox's rules of matching", () => {
  it("a message that arrived before the challenge answers it, newest first; each message once", async () => {
    const accountId = await setUp();
    await push(accountId, "Your verification code is 111111");
    h.clock.advance(1_000);
    await push(accountId, "Your verification code is 222222");
    // Answered as the challenge opens: it does not pause.
    const first = await start(accountId);
    expect(await ended(first)).toMatchObject({ status: "succeeded", answered_by: "inbox", result: { answer: "222222" } });
    // The newest is used; the older one is still unused and may answer the next (within 10 minutes).
    const second = await start(accountId);
    expect(await ended(second)).toMatchObject({ status: "succeeded", result: { answer: "111111" } });
    const third = await connect(accountId);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await h.request("GET", `/v1/actions/${third}`)).json.status).toBe("needs_input");
    const listed = (await h.request("GET", `/v1/accounts/${accountId}/messages`)).json.data;
    expect(listed.map((message: { used_for?: string }) => message.used_for)).toEqual([first, second]);
  });

  it("a code already received is used as the challenge opens: the action never waits at needs_input, and its events say answered_by inbox", async () => {
    const accountId = await setUp();
    await push(accountId, "Your verification code is 121212");
    const actionId = await start(accountId);
    expect(await ended(actionId)).toMatchObject({ status: "succeeded", answered_by: "inbox", result: { answer: "121212" } });
    const workspaceId = (await h.store.actions.get(actionId))!.workspace_id;
    const updates = (await h.store.events.after(workspaceId, 0, 1_000))
      .filter((event) => event.type === "action.updated" && event.subject_id === actionId)
      .map((event) => event.data as { status: string; answered_by?: string });
    expect(updates.map(({ status, answered_by }) => [status, answered_by])).toEqual([
      ["queued", undefined],
      ["running", undefined],
      ["running", "inbox"],
      ["succeeded", "inbox"],
    ]);
    expect(await h.store.challenges.latestOf(actionId)).toMatchObject({ kind: "email_code", answered_by: "inbox" });
    expect((await h.request("GET", `/v1/accounts/${accountId}/messages`)).json.data).toMatchObject([{ used_for: actionId }]);
  });

  it("a message older than ten minutes when the challenge starts does not answer it", async () => {
    const accountId = await setUp();
    await push(accountId, "Your verification code is 333333");
    h.clock.advance(10 * 60 * 1000 + 1_000);
    const actionId = await connect(accountId);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await h.request("GET", `/v1/actions/${actionId}`)).json.status).toBe("needs_input");
    // A message arriving now answers it.
    expect((await push(accountId, "Your verification code is 444444")).used_for).toBe(actionId);
    expect(await ended(actionId)).toMatchObject({ status: "succeeded", result: { answer: "444444" } });
  });

  it("a message in which no code is found is kept, unused; a text does not answer an e-mail challenge", async () => {
    const accountId = await setUp();
    const actionId = await connect(accountId);
    expect((await push(accountId, "Welcome to the platform! We are glad you are here.")).used_for).toBeUndefined();
    expect((await push(accountId, "Your verification code is 555555", "sms")).used_for).toBeUndefined();
    expect((await h.request("GET", `/v1/actions/${actionId}`)).json.status).toBe("needs_input");
    expect((await push(accountId, "Your verification code is 666666")).used_for).toBe(actionId);
    expect(await ended(actionId)).toMatchObject({ result: { answer: "666666" } });
  });

  it("messages are kept 24 hours", async () => {
    const accountId = await setUp();
    await push(accountId, "Your verification code is 777777");
    expect((await h.request("GET", `/v1/accounts/${accountId}/messages`)).json.data).toHaveLength(1);
    h.clock.advance(24 * 60 * 60 * 1000 + 1_000);
    expect((await h.request("GET", `/v1/accounts/${accountId}/messages`)).json.data).toHaveLength(0);
    expect(await h.store.inbox.deleteExpired(h.engine.core.lifecycle.now())).toBe(1);
  });

  it("only an admin lists messages; operators push and see the inbox, read-only keys neither", async () => {
    const accountId = await setUp();
    const operator = await h.key("operator");
    const readOnly = await h.key("read_only");
    expect((await h.request("GET", `/v1/accounts/${accountId}`, { key: operator })).json.inbox).toMatchObject({ sms_url: expect.stringContaining("/inbound/sms/") });
    expect((await h.request("GET", `/v1/accounts/${accountId}`, { key: readOnly })).json.inbox).toBeUndefined();
    expect((await h.request("GET", `/v1/accounts/${accountId}/messages`, { key: operator })).status).toBe(403);
    expect((await h.request("POST", `/v1/accounts/${accountId}/messages`, { key: readOnly, body: { channel: "email", text: "code 123456" } })).status).toBe(403);
    expect((await h.request("POST", `/v1/accounts/${accountId}/messages`, { key: operator, body: { channel: "email", text: "code 123456" } })).status).toBe(202);
    expect((await h.request("POST", `/v1/accounts/${accountId}/messages`, { body: { channel: "fax", text: "code 123456" } })).status).toBe(422);
    expect((await h.request("POST", `/v1/accounts/${accountId}/inbox/rotate`, { key: operator })).status).toBe(403);
  });
});
