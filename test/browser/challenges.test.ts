import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { TotpStepRepository } from "../../src/store/repositories/totp-steps.js";
import { OffsetClock } from "../helpers/clock.js";
import { startLiveService, type LiveService } from "../helpers/live-service.js";

// Real Chromium against a real sandbox, through the REST API: how sign-in challenges pause,
// resume and end an action, and what a signed-in account keeps between actions. The sandbox and
// the service share one clock (real time plus an offset), so a test can move both to a TOTP step's end.
let live: LiveService;
const clock = new OffsetClock();

beforeAll(async () => {
  live = await startLiveService({ clock });
});

afterAll(async () => {
  await live?.close();
});

afterEach(async () => {
  await live.sandboxApi("POST", "/_sandbox/settings", { redesign: false, rate_limit: { max: 1000, window_seconds: 60 } });
});

const TOTP_STEP_MS = 30_000;

/**
 * Once a sign-in of `handle` has claimed its TOTP time step, moves the clock (the platform's and
 * the service's) on to 3 s before that step's end: a sign-in that must wait for the next step
 * waits those 3 s, not up to 30. Restore the returned spy when done.
 */
function nearStepEndOnceClaimed(handle: string): { mockRestore(): void } {
  const claim = TotpStepRepository.prototype.claim;
  const claimed = vi.spyOn(TotpStepRepository.prototype, "claim").mockImplementation(async function (this: TotpStepRepository, platform, username, step) {
    const won = await claim.call(this, platform, username, step);
    if (won && username === handle) {
      claimed.mockRestore();
      clock.advance(Math.max(0, (step + 1) * TOTP_STEP_MS - 3_000 - clock.now().getTime()));
    }
    return won;
  });
  return claimed;
}

const statusesOf = (actionId: string) => live.history(actionId).map((entry) => entry.status);

/** A wrong code that is surely not the one sent: each digit shifted by one. */
const wrongCode = (code: string) => code.replace(/\d/g, (digit) => String((Number(digit) + 1) % 10));

async function answer(actionId: string, code: string): Promise<any> {
  const response = await live.api("POST", `/v1/actions/${actionId}/answer`, { answer: code });
  expect(response.status).toBe(202);
  return live.wait(actionId);
}

describe("challenges", () => {
  it("a stored TOTP secret answers two-factor sign-in without pausing", async () => {
    const accountId = await live.account("bob", { totp_secret: "JBSWY3DPEHPK3PXP" });
    const action = await live.run(accountId, "connect");
    expect(action).toMatchObject({ status: "succeeded", result: { signed_in: true, profile: { handle: "bob" } } });
    expect(statusesOf(action.id)).toEqual(["queued", "running", "succeeded"]);
    // A pause always opens a challenge record; none was ever opened.
    expect(await live.server.service.store.challenges.latestOf(action.id)).toBeUndefined();
  });

  it("a stored TOTP secret that the platform refuses fails the action with login_failed, without pausing", async () => {
    // The sandbox gives a new TOTP user a random secret: the stored one is wrong.
    const handle = await live.user("totp");
    const accountId = await live.account(handle, { totp_secret: "JBSWY3DPEHPK3PXP" });
    // The refused code's step is spent: the next step's code is tried before the secret is called wrong.
    const claimed = nearStepEndOnceClaimed(handle);
    const action = await live.run(accountId, "connect").finally(() => claimed.mockRestore());
    expect(action).toMatchObject({ status: "failed", error: { code: "login_failed" } });
    expect(action.error.message).toMatch(/TOTP secret/);
    expect(statusesOf(action.id)).not.toContain("needs_input");
  });

  it("one person connected in two workspaces signs in with TOTP in both at once: the second waits for the next time step", async () => {
    const secret = "KRSXG5CTMVRXEZLUKN2XAZLSKNSWG4TF";
    const handle = await live.user("totp", { totp_secret: secret });
    const mine = await live.account(handle, { totp_secret: secret });
    const otherKey = (await live.server.service.engine.keys.issue({ role: "admin", workspaceName: `second-${handle}` })).key;
    const other = await live.api("POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password", totp_secret: secret }, { key: otherKey });
    const runAs = async (key: string, accountId: string): Promise<any> => {
      let action = (await live.api("POST", "/v1/actions?wait=30", { account_id: accountId, type: "connect", params: {} }, { key })).json;
      while (action.status === "queued" || action.status === "running") action = (await live.api("GET", `/v1/actions/${action.id}?wait=30`, undefined, { key })).json;
      return action;
    };
    const claimed = nearStepEndOnceClaimed(handle);
    try {
      const [first, second] = await Promise.all([runAs(live.key, mine), runAs(otherKey, other.json.id)]);
      // Each time step's code is sent once per platform user, so neither is refused.
      expect(first).toMatchObject({ status: "succeeded", result: { profile: { handle } } });
      expect(second).toMatchObject({ status: "succeeded", result: { profile: { handle } } });
    } finally {
      claimed.mockRestore();
    }
  });

  it("an emailed code answered through the API signs the account in", async () => {
    const handle = await live.user("email");
    const accountId = await live.account(handle);
    const paused = await live.run(accountId, "connect");
    expect(paused).toMatchObject({ status: "needs_input", challenge: { kind: "email_code" } });
    expect(paused.challenge.message).toMatch(/emailed a code/);
    expect(paused.challenge.sign_in_url).toMatch(/\/live\//);
    const done = await answer(paused.id, await live.latestCode(handle));
    expect(done).toMatchObject({ status: "succeeded", result: { profile: { handle } } });
    expect(statusesOf(paused.id)).toEqual(["queued", "running", "needs_input", "running", "succeeded"]);
  });

  it("a texted code answered through the API signs the account in", async () => {
    const handle = await live.user("sms");
    const accountId = await live.account(handle);
    const paused = await live.run(accountId, "connect");
    expect(paused).toMatchObject({ status: "needs_input", challenge: { kind: "sms_code" } });
    const outbox = await live.sandboxApi("GET", `/_sandbox/outbox?to=${handle}`);
    expect(outbox[0].channel).toBe("sms");
    const done = await answer(paused.id, outbox[0].code);
    expect(done).toMatchObject({ status: "succeeded", result: { profile: { handle } } });
  });

  it("a device approval on the other device resumes the action with no answer", async () => {
    const handle = await live.user("device");
    const accountId = await live.account(handle);
    const paused = await live.run(accountId, "connect");
    expect(paused).toMatchObject({ status: "needs_input", challenge: { kind: "device_approval" } });
    // The API cannot answer it: only the other device or the live browser can.
    const refused = await live.api("POST", `/v1/actions/${paused.id}/answer`, { answer: "yes" });
    expect(refused.status).toBe(409);
    expect(refused.json.error.details.sign_in_url).toBe(paused.challenge.sign_in_url);
    expect(await live.sandboxApi("POST", "/_sandbox/devices/approve", { handle })).toMatchObject({ approved: 1 });
    const done = await live.finished(paused.id);
    expect(done).toMatchObject({ status: "succeeded", result: { profile: { handle } } });
    expect(statusesOf(paused.id)).toEqual(["queued", "running", "needs_input", "running", "succeeded"]);
    expect((await live.server.service.store.challenges.latestOf(paused.id))?.state).toBe("resolved");
  });

  it("a refused code returns the action to needs_input with the same deadline, and a third refusal fails it with login_failed", async () => {
    const handle = await live.user("email");
    const accountId = await live.account(handle);
    const paused = await live.run(accountId, "connect");
    expect(paused.status).toBe("needs_input");
    const wrong = wrongCode(await live.latestCode(handle));

    const again = await answer(paused.id, wrong);
    expect(again).toMatchObject({ status: "needs_input", challenge: { kind: "email_code", expires_at: paused.challenge.expires_at } });
    expect(again.challenge.message).toMatch(/refused/i);
    expect(again.challenge.message).toMatch(/2 attempts left/);

    const last = await answer(paused.id, wrong);
    expect(last.challenge.message).toMatch(/1 attempt left/);

    const failed = await answer(paused.id, wrong);
    expect(failed).toMatchObject({ status: "failed", error: { code: "login_failed" } });
    expect(failed.error.message).toMatch(/3 answers/);
  });

  it("a security question pauses as kind other with the question as message; a wrong answer is refused, the right one signs in", async () => {
    const handle = await live.user("question");
    const accountId = await live.account(handle);
    const paused = await live.run(accountId, "connect");
    expect(paused).toMatchObject({ status: "needs_input", challenge: { kind: "other", message: "What was the name of your first pet?" } });
    const again = await answer(paused.id, "rover");
    expect(again).toMatchObject({ status: "needs_input", challenge: { kind: "other", expires_at: paused.challenge.expires_at } });
    expect(again.challenge.message).toBe("Your answer was refused: That answer doesn't match our records. 2 attempts left.");
    const done = await answer(paused.id, "Biscuit");
    expect(done).toMatchObject({ status: "succeeded", result: { profile: { handle } } });
    expect(statusesOf(paused.id)).toEqual(["queued", "running", "needs_input", "running", "needs_input", "running", "succeeded"]);
  });

  it("three refused answers to a security question fail the action with login_failed", async () => {
    const accountId = await live.account(await live.user("question", { security_question: "Your favourite colour?", security_answer: "teal" }));
    const paused = await live.run(accountId, "connect");
    expect(paused.challenge).toMatchObject({ kind: "other", message: "Your favourite colour?" });
    for (const left of [2, 1]) expect((await answer(paused.id, "red")).challenge.message).toMatch(`${left} attempt`);
    expect(await answer(paused.id, "red")).toMatchObject({ status: "failed", error: { code: "login_failed" } });
  });

  it("canceling an action at needs_input closes its page and releases its credits", async () => {
    const handle = await live.user("email");
    const accountId = await live.account(handle);
    const before = (await live.api("GET", "/v1/credits")).json.balance;
    const paused = await live.run(accountId, "post", { text: `Never posted ${handle}` });
    expect(paused.status).toBe("needs_input");
    const page = live.server.executor.pages.get(paused.id);
    expect(page?.isClosed()).toBe(false);
    expect((await live.api("GET", "/v1/credits")).json.balance).toBeLessThan(before);

    const canceled = await live.api("POST", `/v1/actions/${paused.id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.json).toMatchObject({ status: "canceled", cost: 0 });
    await live.until(() => !live.server.executor.pages.has(paused.id) && page!.isClosed());
    expect((await live.api("GET", "/v1/credits")).json.balance).toBe(before);
    expect((await live.api("GET", `/v1/actions/${paused.id}`)).json.status).toBe("canceled");
    expect(await live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`)).toEqual([]);
  });
});

describe("a signed-in account", () => {
  it("stays signed in across a restart of the service: the next action needs no challenge", async () => {
    const accountId = await live.account("carol");
    const paused = await live.run(accountId, "connect");
    expect(paused).toMatchObject({ status: "needs_input", challenge: { kind: "email_code" } });
    expect((await answer(paused.id, await live.latestCode("carol"))).status).toBe("succeeded");

    await live.restart();
    const codesBefore = (await live.sandboxApi("GET", "/_sandbox/outbox?to=carol")).length;
    const text = `Back after a restart ${Date.now()}`;
    const posted = await live.run(accountId, "post", { text });
    expect(posted).toMatchObject({ status: "succeeded" });
    expect(statusesOf(posted.id)).not.toContain("needs_input");
    // No sign-in happened at all: the sandbox sent no new code.
    expect((await live.sandboxApi("GET", "/_sandbox/outbox?to=carol")).length).toBe(codesBefore);
  });

  it("a post appears on the platform exactly once, with the id the action returned", async () => {
    const handle = await live.user("none");
    const accountId = await live.account(handle);
    const text = `Hello from the action service ${handle}`;
    const posted = await live.run(accountId, "post", { text });
    expect(posted).toMatchObject({ status: "succeeded", cost: 2 });
    const posts = await live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`);
    expect(posts).toHaveLength(1);
    expect(posts[0]).toMatchObject({ id: posted.result.post_id, author: handle, text });
    expect(posted.result.url).toContain(posted.result.post_id);
  });

  it("runs every action type and returns what the platform shows", async () => {
    const [handle, other] = await Promise.all([live.user("none"), live.user("none")]);
    const accountId = await live.account(handle);

    const alice = await live.run(accountId, "lookup_person", { handle: "alice" });
    expect(alice).toMatchObject({ status: "succeeded", result: { handle: "alice", name: "Alice Johnson", headline: "Product designer at Northwind · sketching in the margins" } });
    // A person without a headline has an empty one, not some other text of the page.
    const plain = await live.run(accountId, "lookup_person", { url: `${live.sandbox.url}/people/${other}` });
    expect(plain).toMatchObject({ status: "succeeded", result: { handle: other, name: `Test ${other}`, headline: "" } });

    const sent = await live.run(accountId, "send_message", { to: "alice", text: `Hi Alice, it's ${handle}` });
    expect(sent).toMatchObject({ status: "succeeded" });
    const read = await live.run(accountId, "lookup_conversation", { with: "alice" });
    expect(read).toMatchObject({ status: "succeeded", result: { conversation_id: sent.result.conversation_id } });
    expect(read.result.messages).toEqual([{ from: handle, text: `Hi Alice, it's ${handle}`, sent_at: expect.any(String) }]);

    const steps = await live.run(accountId, "browser_steps", {
      steps: [{ goto: `${live.sandbox.url}/people/alice` }, { extract_text: "h1", as: "name" }],
    });
    expect(steps).toMatchObject({ status: "succeeded", result: { extracted: { name: "Alice Johnson" } } });
  });

  it("actions of two accounts run in parallel, while two actions of one account run one after the other", async () => {
    const [first, second] = await Promise.all([live.user("none"), live.user("none")]);
    const [firstAccount, secondAccount] = await Promise.all([live.account(first), live.account(second)]);
    const create = async (accountId: string, text: string) =>
      (await live.api("POST", "/v1/actions", { account_id: accountId, type: "post", params: { text } })).json.id as string;
    const ids = await Promise.all([
      create(firstAccount, `First of ${first}`),
      create(firstAccount, `Second of ${first}`),
      create(secondAccount, `Only one of ${second}`),
    ]);
    const done = await Promise.all(ids.map((id) => live.wait(id)));
    expect(done.map((action) => action.status)).toEqual(["succeeded", "succeeded", "succeeded"]);

    const interval = (id: string) => {
      const seen = live.history(id);
      return { start: seen.find((entry) => entry.status === "running")!.at, end: seen.find((entry) => entry.status === "succeeded")!.at };
    };
    const [a1, a2, b] = ids.map(interval) as [ReturnType<typeof interval>, ReturnType<typeof interval>, ReturnType<typeof interval>];
    // One account: the second starts only once the first has ended.
    expect(a2.start).toBeGreaterThanOrEqual(a1.end);
    // Two accounts: their running intervals overlap.
    expect(b.start).toBeLessThan(a1.end);
    expect(a1.start).toBeLessThan(b.end);
  });
});

describe("a browser that dies", () => {
  it("fails the action waiting at needs_input with browser_error, and the next action gets a new browser", async () => {
    const handle = await live.user("email");
    const accountId = await live.account(handle);
    const paused = await live.run(accountId, "connect");
    expect(paused.status).toBe("needs_input");
    const browser = await live.server.pool.browser();
    await browser.close();

    const failed = await live.finished(paused.id);
    expect(failed).toMatchObject({ status: "failed", error: { code: "browser_error" } });
    const other = await live.account(await live.user("none"));
    expect(await live.run(other, "connect")).toMatchObject({ status: "succeeded" });
    expect(await live.server.pool.browser()).not.toBe(browser);
  });
});
