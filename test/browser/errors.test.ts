import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { eventually } from "../helpers/scripted-executor.js";

// Real Chromium against a real sandbox, through the REST API: each action error code the
// sandbox can show, chosen by the driver from what the page shows. Challenges expire after
// 3 s in this file so that challenge_timeout is reached quickly.
const CHALLENGE_TTL_SECONDS = 3;
let live: LiveService;

beforeAll(async () => {
  live = await startLiveService({ env: { ACTION_SERVICE_CHALLENGE_TTL_SECONDS: String(CHALLENGE_TTL_SECONDS) } });
});

afterAll(async () => {
  await live?.close();
});

afterEach(async () => {
  await live.sandboxApi("POST", "/_sandbox/settings", { redesign: false, rate_limit: { max: 1000, window_seconds: 60 } });
});

/** A sandbox user without a sign-in challenge, and its account, already connected. */
async function connectedAccount(): Promise<{ handle: string; accountId: string }> {
  const handle = await live.user("none");
  const accountId = await live.account(handle);
  const connected = await live.run(accountId, "connect");
  expect(connected.status).toBe("succeeded");
  return { handle, accountId };
}

describe("action errors", () => {
  it("signed_out: the session ended and the stored password no longer signs in", async () => {
    const { handle, accountId } = await connectedAccount();
    // While the stored password works, a lost session is only a new sign-in.
    expect(await live.sandboxApi("POST", `/_sandbox/users/${handle}/sessions/expire`)).toMatchObject({ expired: 1 });
    expect(await live.run(accountId, "post", { text: `Signed in again ${handle}` })).toMatchObject({ status: "succeeded" });

    expect((await live.api("PATCH", `/v1/accounts/${accountId}`, { password: "not-the-password" })).status).toBe(200);
    expect(await live.sandboxApi("POST", `/_sandbox/users/${handle}/sessions/expire`)).toMatchObject({ expired: 1 });
    const action = await live.run(accountId, "post", { text: "Lost my session" });
    expect(action).toMatchObject({ status: "failed", error: { code: "signed_out" } });
    expect((await live.api("GET", `/v1/accounts/${accountId}`)).json.status).toBe("needs_auth");
  });

  it("login_failed: the platform refuses the password on connect", async () => {
    const handle = await live.user("none");
    const accountId = await live.account(handle, { password: "not-the-password" });
    const action = await live.run(accountId, "connect");
    expect(action).toMatchObject({ status: "failed", error: { code: "login_failed" } });
    expect(action.error.message).toMatch(/password you entered is incorrect/);
  });

  it("account_blocked: the platform shows a checkpoint after the password", async () => {
    const accountId = await live.account("grace");
    const action = await live.run(accountId, "connect");
    expect(action).toMatchObject({ status: "failed", error: { code: "account_blocked" } });
  });

  it("rate_limited: the platform asks the account to slow down", async () => {
    const { handle, accountId } = await connectedAccount();
    await live.sandboxApi("POST", "/_sandbox/settings", { rate_limit: { max: 1, window_seconds: 600 } });
    // Viewing the profile on connect counted once already: the next counted page is one too many.
    const action = await live.run(accountId, "post", { text: `Too fast ${handle}` });
    expect(action).toMatchObject({ status: "failed", error: { code: "rate_limited" } });
    expect(await live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`)).toEqual([]);

    // The account's next post waits out a cool-down (DESIGN §16): queued, never failed, 15 min after the failure.
    const failedAt = Date.parse(action.finished_at);
    const next = (await live.api("POST", "/v1/actions", { account_id: accountId, type: "post", params: { text: `Later ${handle}` } })).json;
    const held = await eventually(async () => {
      const current = (await live.api("GET", `/v1/actions/${next.id}`)).json;
      return current.not_before ? current : undefined;
    });
    expect(held.status).toBe("queued");
    expect(Date.parse(held.not_before) - failedAt).toBeGreaterThanOrEqual(15 * 60_000);
    expect(Date.parse(held.not_before) - failedAt).toBeLessThan(16 * 60_000);
    expect(held.next_step).toMatch(/^Cooling down: the platform asked this account to slow down \(rate_limited\)/);
    expect((await live.api("POST", `/v1/actions/${next.id}/cancel`)).json.status).toBe("canceled");
  });

  it("not_found: the person does not exist", async () => {
    const { accountId } = await connectedAccount();
    const action = await live.run(accountId, "lookup_person", { handle: "nobody_here_at_all" });
    expect(action).toMatchObject({ status: "failed", error: { code: "not_found" } });
  });

  it("unsupported: the account has no direct messages, at no cost", async () => {
    const handle = await live.user("none", { messaging: false });
    const accountId = await live.account(handle);
    const before = (await live.api("GET", "/v1/credits")).json.balance;
    const sent = await live.run(accountId, "send_message", { to: "alice", text: `Hi from ${handle}` });
    expect(sent).toMatchObject({ status: "failed", error: { code: "unsupported" }, cost: 0 });
    expect(sent.error.message).toMatch(/no direct messages/);
    for (const params of [{ with: "alice" }, { conversation_id: "zzzzzzzzzzzz" }]) {
      expect(await live.run(accountId, "lookup_conversation", params)).toMatchObject({ status: "failed", error: { code: "unsupported" }, cost: 0 });
    }
    expect((await live.api("GET", "/v1/credits")).json.balance).toBe(before);
  });

  it("invalid_input: a post longer than the platform allows, at no cost", async () => {
    const { handle, accountId } = await connectedAccount();
    const action = await live.run(accountId, "post", { text: "x".repeat(501) });
    expect(action).toMatchObject({ status: "failed", error: { code: "invalid_input" }, cost: 0 });
    expect(action.error.message).toMatch(/too long/);
    expect(await live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`)).toEqual([]);
  });

  it("invalid_input: browser steps may not open another origin", async () => {
    const { accountId } = await connectedAccount();
    const action = await live.run(accountId, "browser_steps", { steps: [{ goto: `${live.url}/healthz` }] });
    expect(action).toMatchObject({ status: "failed", error: { code: "invalid_input" }, cost: 0 });
  });

  it("rejected: the platform refuses a duplicate post and keeps one copy", async () => {
    const { handle, accountId } = await connectedAccount();
    const text = `Said it once ${handle}`;
    expect((await live.run(accountId, "post", { text })).status).toBe("succeeded");
    const again = await live.run(accountId, "post", { text });
    expect(again).toMatchObject({ status: "failed", error: { code: "rejected" } });
    expect(again.error.message).toMatch(/already posted this/);
    expect(await live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`)).toHaveLength(1);
  });

  it("ui_changed: the site was redesigned under the driver", async () => {
    const { handle, accountId } = await connectedAccount();
    await live.sandboxApi("POST", "/_sandbox/settings", { redesign: true });
    const action = await live.run(accountId, "post", { text: `After the redesign ${handle}` });
    expect(action).toMatchObject({ status: "failed", error: { code: "ui_changed" } });
    expect(await live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`)).toEqual([]);
  });

  it("challenge_timeout: an unsolved captcha expires, and its page is closed", async () => {
    const handle = await live.user("captcha");
    const accountId = await live.account(handle);
    const paused = await live.run(accountId, "connect");
    expect(paused).toMatchObject({ status: "needs_input", challenge: { kind: "captcha" } });
    const page = live.server.executor.pages.get(paused.id);
    expect(page?.isClosed()).toBe(false);
    // Only the live browser can solve it.
    expect((await live.api("POST", `/v1/actions/${paused.id}/answer`, { answer: "star" })).status).toBe(409);

    const failed = await live.finished(paused.id, (CHALLENGE_TTL_SECONDS + 10) * 1000);
    expect(failed).toMatchObject({ status: "failed", error: { code: "challenge_timeout" } });
    expect(Date.parse(failed.finished_at)).toBeGreaterThanOrEqual(Date.parse(paused.challenge.expires_at));
    await live.until(() => !live.server.executor.pages.has(paused.id) && page!.isClosed());
  });

  it("browser_error: the browser dies during a slow step, and the next action gets a new browser", async () => {
    const { accountId } = await connectedAccount();
    const marker = `${live.sandbox.url}/feed?slow=1`;
    const created = await live.api("POST", "/v1/actions", {
      account_id: accountId,
      type: "browser_steps",
      params: { steps: [{ goto: marker }, { wait_for: "text=A heading that never shows", timeout_ms: 30_000 }] },
    });
    await live.until(() => live.server.executor.pages.get(created.json.id)?.url() === marker);
    const browser = await live.server.pool.browser();
    await browser.close();

    const failed = await live.finished(created.json.id);
    expect(failed).toMatchObject({ status: "failed", error: { code: "browser_error" } });
    // Only reading steps ran: the message says nothing was done on the platform.
    expect(failed.error.message).toMatch(/nothing was submitted|nothing was done there/);
    await connectedAccount();
    expect(await live.server.pool.browser()).not.toBe(browser);
  });

  it("browser_error past the commit point says the platform may already have done it", async () => {
    const { accountId } = await connectedAccount();
    const marker = `${live.sandbox.url}/feed?slow=2`;
    // A click is a step that may change something: the commit point comes before it.
    const created = await live.api("POST", "/v1/actions", {
      account_id: accountId,
      type: "browser_steps",
      params: { steps: [{ click: "body" }, { goto: marker }, { wait_for: "text=A heading that never shows", timeout_ms: 30_000 }] },
    });
    await live.until(() => live.server.executor.pages.get(created.json.id)?.url() === marker);
    await (await live.server.pool.browser()).close();
    const failed = await live.finished(created.json.id);
    expect(failed).toMatchObject({ status: "failed", error: { code: "browser_error" } });
    expect(failed.error.message).toMatch(/may already have done it/);
  });

  it("login_failed: a session that turns out to be another user's is refused and not kept", async () => {
    const { handle, accountId } = await connectedAccount();
    const otherHandle = await live.user("none");
    const other = await live.account(otherHandle);
    const { store } = live.server.service;
    // The first user's session lands in the second account (as an owner link could once make happen).
    await store.accounts.setSecret(other, "session", (await store.accounts.getSecret(accountId, "session"))!, new Date().toISOString());
    const refused = await live.run(other, "connect");
    expect(refused).toMatchObject({ status: "failed", error: { code: "login_failed" } });
    expect(refused.error.message).toContain(`Signed in as @${handle}, but this account is @${otherHandle}`);
    expect(JSON.parse((await store.accounts.getSecret(other, "session"))!).cookies).toEqual([]);
    // Nothing of the other user is left: the next connect signs in with the account's own credentials.
    const connected = await live.run(other, "connect");
    expect(connected).toMatchObject({ status: "succeeded", result: { profile: { handle: otherHandle } } });
  });
});
