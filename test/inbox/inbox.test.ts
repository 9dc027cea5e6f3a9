import nodemailer from "nodemailer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLiveService, type LiveService } from "../helpers/live-service.js";

// The inbox (DESIGN §15) end to end: the service's SMTP listener on 127.0.0.1, the sandbox mailing
// and texting its codes like a platform, real Chromium signing in.
let live: LiveService;

beforeAll(async () => {
  live = await startLiveService({ inbox: true });
}, 60_000);

afterAll(async () => {
  await live?.close();
});

/** The action's `action.updated` events as the outbox keeps them (what webhooks and the SSE stream carry), oldest first. */
async function updates(actionId: string): Promise<{ status: string; answered_by?: string }[]> {
  const { store } = live.server.service;
  const workspaceId = (await store.actions.get(actionId))!.workspace_id;
  const events = await store.events.list(workspaceId, 10_000);
  return events.filter((event) => event.type === "action.updated" && event.subject_id === actionId).map((event) => event.data as unknown as { status: string; answered_by?: string });
}

/** Sends a mail to the service's SMTP listener; resolves to the SMTP reply code of a refusal, or 250. */
async function mail(to: string, text: string): Promise<number> {
  const transport = nodemailer.createTransport({ host: "127.0.0.1", port: live.server.mail!.port, secure: false, ignoreTLS: true });
  try {
    await transport.sendMail({ from: "someone@example.com", to, subject: "hello", text });
    return 250;
  } catch (error) {
    return (error as { responseCode?: number }).responseCode ?? -1;
  } finally {
    transport.close();
  }
}

async function connect(accountId: string): Promise<string> {
  const created = await live.api("POST", "/v1/actions", { account_id: accountId, type: "connect", params: {} });
  expect(created.status).toBe(202);
  return created.json.id;
}

async function messages(accountId: string): Promise<{ id: string; channel: string; used_for?: string }[]> {
  return (await live.api("GET", `/v1/accounts/${accountId}/messages`)).json.data;
}

describe("codes that arrive by themselves: connect succeeds with nobody answering", () => {
  for (const challenge of ["email", "sms", "magic_link"] as const) {
    it(`${challenge}: the code (or link) the sandbox sent answers the challenge; answered_by inbox`, async () => {
      const { accountId, handle } = await live.inboxUser(challenge);
      const actionId = await connect(accountId);
      expect(await live.finished(actionId, 60_000)).toMatchObject({ status: "succeeded", answered_by: "inbox" });
      expect((await updates(actionId)).at(-1)).toMatchObject({ status: "succeeded", answered_by: "inbox" });
      const [message] = await messages(accountId);
      expect(message).toMatchObject({ channel: challenge === "sms" ? "sms" : "email", used_for: actionId });
      // Never the text, never the code.
      expect(Object.keys(message!).sort()).toEqual(["channel", "found", "from", "id", "may_answer", "object", "received_at", "used_for"].filter((key) => key !== "from" || "from" in message!));
      // "Remember this device" was ticked (after the code was typed): the sandbox remembers the browser.
      expect(await live.sandboxApi("POST", `/_sandbox/users/${handle}/devices/forget`)).toMatchObject({ forgotten: 1 });
    }, 90_000);
  }
});

describe("pushed messages and the rules of matching", () => {
  it("a pushed message answers a waiting challenge (REST); the message says what it answered", async () => {
    const handle = await live.user("email");
    const accountId = await live.account(handle);
    const actionId = await connect(accountId);
    expect(await live.wait(actionId)).toMatchObject({ status: "needs_input", challenge: { kind: "email_code" } });
    const [sent] = await live.sandboxApi("GET", `/_sandbox/outbox?to=${handle}`);
    const pushed = await live.api("POST", `/v1/accounts/${accountId}/messages`, { channel: "email", text: sent.text });
    expect(pushed.status).toBe(202);
    expect(pushed.json).toMatchObject({ object: "message", channel: "email", used_for: actionId });
    expect(await live.finished(actionId, 60_000)).toMatchObject({ status: "succeeded", answered_by: "inbox" });
  }, 90_000);

  it("a message for account A never answers B's challenge", async () => {
    const [a, b] = [await live.user("email"), await live.user("email")];
    const [accountA, accountB] = [await live.account(a), await live.account(b)];
    const actionB = await connect(accountB);
    expect(await live.wait(actionB)).toMatchObject({ status: "needs_input" });
    const codeForB = await live.latestCode(b);
    const pushed = await live.api("POST", `/v1/accounts/${accountA}/messages`, { channel: "email", text: `Your Sandbox Social code is ${codeForB}` });
    expect(pushed.json.used_for).toBeUndefined();
    // A text never answers an e-mail challenge either.
    expect((await live.api("POST", `/v1/accounts/${accountB}/messages`, { channel: "sms", text: `Your Sandbox Social code is ${codeForB}` })).json.used_for).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await live.api("GET", `/v1/actions/${actionB}`)).json.status).toBe("needs_input");
    await live.api("POST", `/v1/actions/${actionB}/cancel`);
    void accountA;
  }, 90_000);

  it("mail to an unknown or rotated-away address is refused at RCPT TO, and nothing is stored", async () => {
    const { accountId, inbox } = await live.inboxUser("email");
    expect(await mail(`${"0".repeat(32)}@inbox.localhost`, "code 123456")).toBe(550);
    expect(await mail("postmaster@example.com", "relay me")).toBe(550);
    expect(await mail(inbox.email.toUpperCase(), "Your verification code is 482913")).toBe(250);
    const rotated = await live.api("POST", `/v1/accounts/${accountId}/inbox/rotate`);
    expect(rotated.status).toBe(200);
    expect(rotated.json.inbox.email).not.toBe(inbox.email);
    expect(rotated.json.inbox.sms_url).not.toBe(inbox.sms_url);
    expect(await mail(inbox.email, "Your verification code is 111111")).toBe(550);
    expect((await fetch(inbox.sms_url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ text: "code 222222" }) })).status).toBe(404);
    // The one mail to the address while it was current, and nothing else.
    expect(await messages(accountId)).toHaveLength(1);
    // Past 64 KB, refused whether its length is announced or not (a stream has none), and nothing kept.
    const big = JSON.stringify({ text: "x".repeat(70_000) });
    expect((await fetch(rotated.json.inbox.sms_url, { method: "POST", headers: { "content-type": "application/json" }, body: big })).status).toBe(400);
    const streamed = new ReadableStream({ start: (controller) => (controller.enqueue(new TextEncoder().encode(big)), controller.close()) });
    expect((await fetch(rotated.json.inbox.sms_url, { method: "POST", headers: { "content-type": "application/json" }, body: streamed, duplex: "half" } as RequestInit)).status).toBe(400);
    expect(await messages(accountId)).toHaveLength(1);
    expect(await mail(rotated.json.inbox.email, "Your verification code is 333333")).toBe(250);
    const form = await fetch(rotated.json.inbox.sms_url, { method: "POST", body: new URLSearchParams({ From: "+15550100", Body: "code 444444" }) });
    expect(form.status).toBe(202);
    expect((await messages(accountId)).map((message) => message.channel)).toEqual(["sms", "email", "email"]);
  }, 90_000);

  it("a mail over 512 KB is refused with 552 and not kept", async () => {
    const { accountId, inbox } = await live.inboxUser("email");
    expect(await mail(inbox.email, `Your verification code is 482913\n${"x".repeat(600 * 1024)}`)).toBe(552);
    expect(await messages(accountId)).toHaveLength(0);
    expect(await mail(inbox.email, "Your verification code is 482913")).toBe(250);
    expect(await messages(accountId)).toHaveLength(1);
  }, 60_000);

  it("a wrong code from the inbox goes back to a person without counting toward three refusals; the inbox types no second one; the person then answers", async () => {
    const handle = await live.user("email");
    const accountId = await live.account(handle);
    const actionId = await connect(accountId);
    expect(await live.wait(actionId)).toMatchObject({ status: "needs_input" });
    const right = await live.latestCode(handle);
    const wrong = right === "000000" ? "111111" : "000000";
    const pushed = await live.api("POST", `/v1/accounts/${accountId}/messages`, { channel: "email", text: `Your Sandbox Social code is ${wrong}` });
    expect(pushed.json.used_for).toBe(actionId);
    await live.until(async () => {
      const action = (await live.api("GET", `/v1/actions/${actionId}`)).json;
      return action.status === "needs_input" && action.challenge.message.includes("inbox received was refused");
    }, 30_000);
    // The inbox answers this challenge no more: later messages are kept for the person, not typed.
    for (let i = 0; i < 3; i++) {
      const later = await live.api("POST", `/v1/accounts/${accountId}/messages`, { channel: "email", text: `Your Sandbox Social code is ${wrong}` });
      expect(later.json).toMatchObject({ found: "code", may_answer: true });
      expect(later.json.used_for).toBeUndefined();
    }
    const waiting = (await live.api("GET", `/v1/actions/${actionId}`)).json;
    expect(waiting).toMatchObject({ status: "needs_input", answered_by: "inbox", challenge: { kind: "email_code" } });
    // One wrong code reached the platform: a person's three would have failed the action (login_failed).
    expect((await live.api("POST", `/v1/actions/${actionId}/answer`, { answer: right })).status).toBe(202);
    expect(await live.finished(actionId, 60_000)).toMatchObject({ status: "succeeded", answered_by: "agent" });
  }, 120_000);
});

describe("forged mail: only what the platform's DKIM signature proves is typed", () => {
  /** Mails the inbox address as a forger would: the platform's own From, no signature. */
  async function forge(to: string, code: string): Promise<void> {
    const transport = nodemailer.createTransport({ host: "127.0.0.1", port: live.server.mail!.port, secure: false, ignoreTLS: true });
    try {
      await transport.sendMail({ from: "Sandbox Social <no-reply@sandbox.localhost>", to, subject: `Your Sandbox Social code is ${code}`, text: `Your Sandbox Social sign-in code is ${code}` });
    } finally {
      transport.close();
    }
  }

  it("a forger flooding the inbox with the platform's From during a sign-in gets no code typed; the platform's signed mail answers", async () => {
    const { accountId, inbox } = await live.inboxUser("email");
    let flooding = true;
    const flood = (async () => {
      while (flooding) {
        await forge(inbox.email, "000000");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    await forge(inbox.email, "000000");
    const actionId = await connect(accountId);
    const done = await live.finished(actionId, 60_000);
    flooding = false;
    await flood;
    expect(done).toMatchObject({ status: "succeeded", answered_by: "inbox" });
    // No wrong code reached the platform: the challenge was never refused (a refused inbox code closes it to the inbox).
    const challenge = await live.server.service.store.challenges.latestOf(actionId);
    expect(challenge).toMatchObject({ kind: "email_code", answered_by: "inbox", refusals: 0 });
    expect(challenge!.inbox_closed_at).toBeUndefined();
    const listed = (await live.api("GET", `/v1/accounts/${accountId}/messages`)).json.data as { from?: string; used_for?: string; may_answer: boolean; found?: string }[];
    const used = listed.filter((message) => message.used_for === actionId);
    expect(used).toHaveLength(1);
    expect(used[0]).toMatchObject({ may_answer: true, found: "code" });
    const forged = listed.filter((message) => message.used_for === undefined);
    expect(forged.length).toBeGreaterThan(0);
    for (const message of forged) expect(message).toMatchObject({ from: expect.stringContaining("no-reply@sandbox.localhost"), found: "code", may_answer: false });
  }, 90_000);

  it("the same mail the platform signed answers; unsigned, it is kept and never typed, and a person's answer then succeeds", async () => {
    // The sandbox mails this user's codes elsewhere: only what reaches the inbox here counts.
    const handle = await live.user("email");
    const accountId = await live.account(handle);
    const address = (await live.api("GET", `/v1/accounts/${accountId}`)).json.inbox.email as string;
    const actionId = await connect(accountId);
    expect(await live.wait(actionId)).toMatchObject({ status: "needs_input", challenge: { kind: "email_code" } });
    const right = await live.latestCode(handle);
    // The right code, in the platform's words and under its From, unsigned: kept, never typed.
    await forge(address, right);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await live.api("GET", `/v1/actions/${actionId}`)).json.status).toBe("needs_input");
    expect((await messages(accountId))[0]).toMatchObject({ channel: "email" });
    expect(((await live.api("GET", `/v1/accounts/${accountId}/messages`)).json.data as { may_answer: boolean }[])[0]).toMatchObject({ may_answer: false, found: "code" });
    expect((await live.api("POST", `/v1/actions/${actionId}/answer`, { answer: right })).status).toBe(202);
    expect(await live.finished(actionId, 60_000)).toMatchObject({ status: "succeeded", answered_by: "agent" });
  }, 90_000);
});
