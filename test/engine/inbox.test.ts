import { afterEach, describe, expect, it } from "vitest";
import type { ExecutionContext } from "../../src/engine/execution/index.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { SCRIPTED_PLATFORM, ScriptedExecutor, eventually, gate } from "../helpers/scripted-executor.js";

// The inbox's rules of matching (DESIGN §15) on the real engine and store (SQLite here; PostgreSQL
// under test:postgres), the platform scripted: the script asks for an email_code and returns the
// answer it got, so a test sees exactly what the inbox typed.
let h: Harness;

afterEach(async () => {
  await h?.destroy();
});

/** What the scripted platform was typed, in order. */
let typed: string[] = [];
/** Holds the run after it starts, before its challenge opens (a test opens it). */
let beforeChallenge: { promise: Promise<void>; open(): void } | undefined;

/**
 * The platform: asks for an email_code (after `beforeChallenge`, when set) and returns the answer it
 * got; with `correct`, a platform that refuses any other code and asks again.
 */
function codeScript(correct?: string): ScriptedExecutor {
  return new ScriptedExecutor().on("connect", async (context: ExecutionContext) => {
    await beforeChallenge?.promise;
    for (;;) {
      const answer = await context.challenge({ kind: "email_code", message: "Enter the code we sent to c***@example.com." });
      typed.push(answer ?? "");
      if (correct === undefined || answer === correct) return { answer: answer ?? null };
      await context.refuseAnswer("That code isn't right.");
    }
  });
}

async function setUp(options: { correct?: string; holdBeforeChallenge?: boolean } = {}): Promise<string> {
  typed = [];
  beforeChallenge = options.holdBeforeChallenge ? gate() : undefined;
  h = await createHarness({ executor: codeScript(options.correct) });
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

async function push(accountId: string, text: string, channel = "email"): Promise<{ id: string; used_for?: string; dropped?: number }> {
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
  it("a message received before the action began running never answers it", async () => {
    const accountId = await setUp();
    await push(accountId, "Your verification code is 111111");
    h.clock.advance(1_000);
    const actionId = await connect(accountId);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await h.request("GET", `/v1/actions/${actionId}`)).json.status).toBe("needs_input");
    expect((await push(accountId, "Your verification code is 222222")).used_for).toBe(actionId);
    expect(await ended(actionId)).toMatchObject({ status: "succeeded", answered_by: "inbox", result: { answer: "222222" } });
    expect(typed).toEqual(["222222"]);
  });

  it("a code received after the action began is used as the challenge opens — the first to arrive, not the newest; each message once", async () => {
    const accountId = await setUp({ holdBeforeChallenge: true });
    const actionId = await start(accountId);
    await eventually(async () => (await h.request("GET", `/v1/actions/${actionId}`)).json.status === "running");
    h.clock.advance(1_000);
    const first = await push(accountId, "Your verification code is 121212");
    h.clock.advance(1_000);
    await push(accountId, "Your verification code is 343434");
    beforeChallenge!.open();
    expect(await ended(actionId)).toMatchObject({ status: "succeeded", answered_by: "inbox", result: { answer: "121212" } });
    // It never waited at needs_input.
    const workspaceId = (await h.store.actions.get(actionId))!.workspace_id;
    const updates = (await h.store.events.list(workspaceId, 1_000))
      .filter((event) => event.type === "action.updated" && event.subject_id === actionId)
      .map((event) => event.data as { status: string; answered_by?: string });
    expect(updates.map(({ status, answered_by }) => [status, answered_by])).toEqual([
      ["queued", undefined],
      ["running", undefined],
      ["running", "inbox"],
      ["succeeded", "inbox"],
    ]);
    expect(await h.store.challenges.latestOf(actionId)).toMatchObject({ kind: "email_code", answered_by: "inbox" });
    // The newer message is still unused; it arrived before the next action began, so it never answers that one.
    const listed = (await h.request("GET", `/v1/accounts/${accountId}/messages`)).json.data as { id: string; used_for?: string }[];
    expect(listed.map((message) => [message.id === first.id, message.used_for])).toEqual([
      [false, undefined],
      [true, actionId],
    ]);
    h.clock.advance(1_000);
    beforeChallenge = undefined;
    const next = await connect(accountId);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await h.request("GET", `/v1/actions/${next}`)).json.status).toBe("needs_input");
    expect(typed).toEqual(["121212"]);
  });

  it("a message received more than ten minutes before the challenge starts does not answer it", async () => {
    const accountId = await setUp({ holdBeforeChallenge: true });
    const actionId = await start(accountId);
    await eventually(async () => (await h.request("GET", `/v1/actions/${actionId}`)).json.status === "running");
    await push(accountId, "Your verification code is 333333");
    h.clock.advance(10 * 60 * 1000 + 1_000);
    beforeChallenge!.open();
    await eventually(async () => (await h.request("GET", `/v1/actions/${actionId}`)).json.status === "needs_input");
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

  it("a forged flood: the inbox types at most one wrong code per challenge, then leaves it to a person", async () => {
    const accountId = await setUp({ correct: "424242", holdBeforeChallenge: true });
    const actionId = await start(accountId);
    await eventually(async () => (await h.request("GET", `/v1/actions/${actionId}`)).json.status === "running");
    for (let i = 0; i < 3; i++) await push(accountId, "Your verification code is 000000");
    beforeChallenge!.open();
    // The first forged code is typed as the challenge opens and refused: back to a person.
    const paused = await eventually(async () => {
      const action = (await h.request("GET", `/v1/actions/${actionId}`)).json;
      return action.status === "needs_input" ? action : undefined;
    });
    expect(paused.challenge.message).toContain("The code the inbox received was refused");
    // More forgeries, and even the right code by mail: the inbox answers this challenge no more.
    for (let i = 0; i < 5; i++) expect((await push(accountId, "Your verification code is 000000")).used_for).toBeUndefined();
    expect((await push(accountId, "Your verification code is 424242")).used_for).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await h.request("GET", `/v1/actions/${actionId}`)).json.status).toBe("needs_input");
    expect(typed).toEqual(["000000"]);
    // The refused inbox code did not count toward the three refusals; a person's answer succeeds.
    // Taken: 202 while the action runs on, 200 when it has already ended by the reply (the scripted platform is quick).
    expect([200, 202]).toContain((await h.request("POST", `/v1/actions/${actionId}/answer`, { body: { answer: "424242" } })).status);
    expect(await ended(actionId)).toMatchObject({ status: "succeeded", answered_by: "agent", result: { answer: "424242" } });
    expect(typed).toEqual(["000000", "424242"]);
    expect(await h.store.challenges.latestOf(actionId)).toMatchObject({ refusals: 0, inbox_closed_at: expect.any(String) });
  });

  it("an account keeps at most 100 unused messages: the oldest go first, and the answer says so", async () => {
    const accountId = await setUp();
    for (let i = 0; i < 100; i++) expect((await push(accountId, `Newsletter number ${i}`)).dropped).toBeUndefined();
    const oldest = (await h.store.inbox.list(accountId, h.engine.core.lifecycle.now(), 1_000)).at(-1)!;
    h.clock.advance(1_000);
    const pushed = await push(accountId, "Your verification code is 989898");
    expect(pushed).toMatchObject({ dropped: 1, found: "code", may_answer: true });
    const kept = await h.store.inbox.list(accountId, h.engine.core.lifecycle.now(), 1_000);
    expect(kept).toHaveLength(100);
    expect(kept.map((message) => message.id)).not.toContain(oldest.id);
    expect(kept[0]!.id).toBe(pushed.id);
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

describe("who may answer: a platform that declares its senders", () => {
  /** Receives a mail as the SMTP listener hands it over, with the domains its DKIM signatures proved. */
  async function mail(accountId: string, text: string, authenticated: string[]) {
    return h.engine.inbox.receive(accountId, { channel: "email", source: "smtp", from: "Platform <no-reply@platform.example>", text, authenticated });
  }

  it("only mail a declared sender's DKIM signature proves is typed; other mail is kept and listed, never typed", async () => {
    typed = [];
    beforeChallenge = undefined;
    const platform = { ...SCRIPTED_PLATFORM, inbox: { senders: ["platform.example"] } };
    h = await createHarness({ executor: codeScript(), engine: { platforms: [platform] } });
    const accountId = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "carol", password: "pw" } })).json.id as string;
    const actionId = await connect(accountId);
    // Unsigned, signed by another domain, or by a bare top-level name: kept, never typed.
    for (const authenticated of [[], ["evil.example"], ["example"], ["platform.example.evil.test"]]) {
      expect(await mail(accountId, "Your verification code is 000000", authenticated)).toMatchObject({ found: "code", may_answer: false, used_for: undefined });
    }
    // A text is not mail: the SMS URL is the credential, and it answers only sms_code challenges anyway.
    expect((await push(accountId, "Your verification code is 111111", "sms")).used_for).toBeUndefined();
    expect((await h.request("GET", `/v1/actions/${actionId}`)).json.status).toBe("needs_input");
    // Signed by a subdomain of the declared sender: typed.
    expect(await mail(accountId, "Your verification code is 246810", ["mail.platform.example"])).toMatchObject({ may_answer: true, used_for: actionId });
    expect(await ended(actionId)).toMatchObject({ status: "succeeded", answered_by: "inbox", result: { answer: "246810" } });
    expect(typed).toEqual(["246810"]);
    const listed = (await h.request("GET", `/v1/accounts/${accountId}/messages`)).json.data as { may_answer: boolean }[];
    expect(listed.map((message) => message.may_answer).sort()).toEqual([false, false, false, false, true, true]);
  });
});
