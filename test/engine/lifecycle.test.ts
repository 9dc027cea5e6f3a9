import { afterEach, describe, expect, it, vi } from "vitest";
import { ActionFailure } from "../../src/domain/errors.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually, gate, sleep } from "../helpers/scripted-executor.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.destroy();
  harness = undefined;
});

async function setup(executor: ScriptedExecutor): Promise<{ h: Harness; accountId: string }> {
  const h = (harness = await createHarness({ executor }));
  const account = await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "carol", password: "pw-carol-123" } });
  expect(account.status).toBe(201);
  return { h, accountId: account.json.id };
}

describe("action lifecycle", () => {
  it("runs queued → running → succeeded, 202 while running and 200 once ended", async () => {
    const hold = gate();
    const executor = new ScriptedExecutor().on("post", async () => {
      await hold.promise;
      return { post_id: "p1", url: "http://sandbox/posts/p1" };
    });
    const { h, accountId } = await setup(executor);
    const created = await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text: "hi" } } });
    expect(created.status).toBe(202);
    expect(["queued", "running"]).toContain(created.json.status);
    await eventually(async () => (await h.store.actions.get(created.json.id))?.status === "running");
    const running = await h.request("GET", `/v1/actions/${created.json.id}`);
    expect(running.status).toBe(202);
    expect(running.json.status).toBe("running");
    hold.open();
    const done = await h.request("GET", `/v1/actions/${created.json.id}?wait=5`);
    expect(done.status).toBe(200);
    expect(done.json).toMatchObject({ status: "succeeded", result: { post_id: "p1" }, cost: 2 });
    expect(done.json.finished_at).toBeTypeOf("string");
    expect(done.json).not.toHaveProperty("error");
    expect(done.json).not.toHaveProperty("challenge");
  });

  it("pauses at needs_input with a challenge and resumes the same run with the answer", async () => {
    const executor = new ScriptedExecutor().on("connect", async (context) => {
      const answer = await context.challenge({ kind: "email_code", message: "We emailed a code to c***@example.com." });
      return { signed_in: true, answer_length: answer?.length };
    });
    const { h, accountId } = await setup(executor);
    const paused = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: accountId, type: "connect" } });
    expect(paused.status).toBe(202);
    expect(paused.json.status).toBe("needs_input");
    expect(paused.json.challenge).toMatchObject({ kind: "email_code", message: "We emailed a code to c***@example.com." });
    expect(paused.json.challenge.expires_at).toBe(new Date(h.clock.now().getTime() + 600_000).toISOString());
    expect(paused.json.challenge.sign_in_url).toMatch(/^http:\/\/127\.0\.0\.1:8787\/live\/[A-Za-z0-9_-]{43}$/);
    const answered = await h.request("POST", `/v1/actions/${paused.json.id}/answer?wait=5`, { body: { answer: "123456" } });
    expect(answered.status).toBe(200);
    expect(answered.json).toMatchObject({ status: "succeeded", result: { signed_in: true, answer_length: 6 } });
    expect(executor.started).toEqual([paused.json.id]);
  });

  it("a refused answer returns the action to needs_input with the same deadline; the third fails it with login_failed", async () => {
    const executor = new ScriptedExecutor().on("connect", async (context) => {
      for (;;) {
        const answer = await context.challenge({ kind: "sms_code", message: "We texted a code to your phone." });
        if (answer === "424242") return { signed_in: true };
        await context.refuseAnswer("That code didn't work.");
      }
    });
    const { h, accountId } = await setup(executor);
    const paused = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: accountId, type: "connect" } });
    const deadline = paused.json.challenge.expires_at;
    const link = paused.json.challenge.sign_in_url;
    h.clock.advance(60_000);
    const first = await h.request("POST", `/v1/actions/${paused.json.id}/answer?wait=5`, { body: { answer: "000000" } });
    expect(first.json.status).toBe("needs_input");
    expect(first.json.challenge.message).toBe("Your answer was refused: That code didn't work. 2 attempts left.");
    expect(first.json.challenge.expires_at).toBe(deadline);
    expect(first.json.challenge.sign_in_url).toBe(link);
    const second = await h.request("POST", `/v1/actions/${paused.json.id}/answer?wait=5`, { body: { answer: "111111" } });
    expect(second.json.challenge.message).toContain("1 attempt left");
    const third = await h.request("POST", `/v1/actions/${paused.json.id}/answer?wait=5`, { body: { answer: "222222" } });
    expect(third.status).toBe(200);
    expect(third.json).toMatchObject({ status: "failed", error: { code: "login_failed" } });
  });

  it("device approval and captcha cannot be answered with text: 409 pointing at sign_in_url", async () => {
    const executor = new ScriptedExecutor().on("connect", async (context) => {
      await context.challenge({ kind: "device_approval", message: "Approve this sign-in on your other device.", resolvedOnPage: (signal) => sleep(60_000, signal) });
      return { signed_in: true };
    });
    const { h, accountId } = await setup(executor);
    const paused = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: accountId, type: "connect" } });
    const refused = await h.request("POST", `/v1/actions/${paused.json.id}/answer`, { body: { answer: "approve" } });
    expect(refused.status).toBe(409);
    expect(refused.json.error.code).toBe("conflict");
    expect(refused.json.error.details.sign_in_url).toBe(paused.json.challenge.sign_in_url);
    expect((await h.request("GET", `/v1/actions/${paused.json.id}`)).json.status).toBe("needs_input");
  });

  it("a challenge resolved on the page resumes without an answer", async () => {
    const approved = gate();
    const executor = new ScriptedExecutor().on("connect", async (context) => {
      await context.challenge({ kind: "device_approval", message: "Approve it.", resolvedOnPage: () => approved.promise });
      return { signed_in: true };
    });
    const { h, accountId } = await setup(executor);
    const paused = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: accountId, type: "connect" } });
    expect(paused.json.status).toBe("needs_input");
    approved.open();
    await eventually(async () => (await h.store.actions.get(paused.json.id))?.status === "succeeded");
    expect((await h.store.challenges.latestOf(paused.json.id))?.state).toBe("resolved");
  });

  it("cancels at every non-terminal status, releases the hold, and refuses to change a terminal action", async () => {
    const hold = gate();
    const executor = new ScriptedExecutor()
      .on("running", async (context) => {
        await sleep(60_000, context.signal);
        return {};
      })
      .on("connect", async (context) => {
        await context.challenge({ kind: "email_code", message: "code?" });
        return {};
      })
      .on("post", async () => {
        await hold.promise;
        return {};
      });
    const { h, accountId } = await setup(executor);
    const other = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "dave" } })).json.id;
    const third = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "erin" } })).json.id;
    const balance = (await h.request("GET", "/v1/credits")).json.balance;

    const waiting = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: accountId, type: "connect" } });
    const running = await h.request("POST", "/v1/actions", { body: { account_id: other, type: "post", params: { text: "running" } } });
    const blocker = await h.request("POST", "/v1/actions", { body: { account_id: third, type: "post", params: { text: "blocker" } } });
    const queued = await h.request("POST", "/v1/actions", { body: { account_id: third, type: "post", params: { text: "queued" } } });
    await eventually(async () => (await h.store.actions.get(running.json.id))?.status === "running");
    expect((await h.store.actions.get(queued.json.id))?.status).toBe("queued");

    for (const action of [waiting, running, queued]) {
      const canceled = await h.request("POST", `/v1/actions/${action.json.id}/cancel`);
      expect(canceled.status).toBe(200);
      expect(canceled.json).toMatchObject({ status: "canceled", cost: 0 });
      const again = await h.request("POST", `/v1/actions/${action.json.id}/cancel`);
      expect(again.status).toBe(409);
      const answer = await h.request("POST", `/v1/actions/${action.json.id}/answer`, { body: { answer: "1" } });
      expect(answer.status).toBe(409);
    }
    hold.open();
    await eventually(async () => (await h.store.actions.get(blocker.json.id))?.status === "succeeded");
    await sleep(50);
    expect((await h.store.actions.get(running.json.id))?.status).toBe("canceled");
    expect((await h.request("GET", "/v1/credits")).json.balance).toBe(balance - 2);
    const finished = await h.request("POST", `/v1/actions/${blocker.json.id}/cancel`);
    expect(finished.status).toBe(409);
    expect((await h.store.actions.get(blocker.json.id))?.status).toBe("succeeded");
  });

  it("an action canceled while its run is being prepared never reaches the driver, and its run ends", async () => {
    const driven = vi.fn();
    // A driver that stops only when told to: one handed a signal already aborted would run on.
    const executor = new ScriptedExecutor().on("post", (context) => {
      driven();
      return new Promise((_, reject) => context.signal.addEventListener("abort", () => reject(context.signal.reason), { once: true }));
    });
    const { h, accountId } = await setup(executor);
    // The run reads the account's secrets before it drives the page: held there, the cancel comes first.
    const preparing = gate();
    const reading = gate();
    const getWithSecrets = h.store.accounts.getWithSecrets.bind(h.store.accounts);
    vi.spyOn(h.store.accounts, "getWithSecrets").mockImplementation(async (id) => {
      reading.open();
      await preparing.promise;
      return getWithSecrets(id);
    });
    const created = await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text: "never" } } });
    await reading.promise;
    expect((await h.request("POST", `/v1/actions/${created.json.id}/cancel`)).json.status).toBe("canceled");
    preparing.open();
    await eventually(async () => h.engine.core.runner.activeCount === 0);
    expect(driven).not.toHaveBeenCalled();
    expect((await h.store.actions.get(created.json.id))?.status).toBe("canceled");
  });

  it("runs one action at a time per account and different accounts in parallel", async () => {
    const active = new Map<string, number>();
    let maxPerAccount = 0;
    let maxOverall = 0;
    const running = (): number => [...active.values()].reduce((a, b) => a + b, 0);
    const executor = new ScriptedExecutor().on("post", async (context) => {
      const id = context.account.id;
      active.set(id, (active.get(id) ?? 0) + 1);
      maxPerAccount = Math.max(maxPerAccount, active.get(id)!);
      maxOverall = Math.max(maxOverall, running());
      // Each run lasts until another runs beside it (however slow the machine), or 2 s.
      for (let waited = 0; running() < 2 && waited < 2_000; waited += 10) await sleep(10);
      await sleep(20);
      maxOverall = Math.max(maxOverall, running());
      active.set(id, active.get(id)! - 1);
      return {};
    });
    const { h, accountId } = await setup(executor);
    const other = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "dave" } })).json.id;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      for (const account of [accountId, other]) {
        ids.push((await h.request("POST", "/v1/actions", { body: { account_id: account, type: "post", params: { text: `t${i}` } } })).json.id);
      }
    }
    await eventually(async () => (await Promise.all(ids.map((id) => h.store.actions.get(id)))).every((action) => action?.status === "succeeded"));
    expect(maxPerAccount).toBe(1);
    expect(maxOverall).toBe(2);
  });

  it("maps a driver's ActionFailure to a failed action (still 200) and an unexpected error to browser_error", async () => {
    const executor = new ScriptedExecutor()
      .on("limited", async () => {
        throw new ActionFailure("rate_limited", "You're doing that too much.");
      })
      .on("crash", async () => {
        throw new Error("Target page, context or browser has been closed");
      });
    const { h, accountId } = await setup(executor);
    const crash = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: accountId, type: "post", params: { text: "crash" } } });
    expect(crash.json).toMatchObject({ status: "failed", error: { code: "browser_error" } });
    expect(crash.json.error.message).not.toContain("Target page");
    // Last: a rate_limited post cools the account's later posts down (test/engine/pacing.test.ts).
    const limited = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: accountId, type: "post", params: { text: "limited" } } });
    expect(limited.status).toBe(200);
    expect(limited.json).toMatchObject({ status: "failed", error: { code: "rate_limited", message: "You're doing that too much." }, cost: 2 });
  });
});
