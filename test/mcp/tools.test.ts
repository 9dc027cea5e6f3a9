import { describe, expect, it } from "vitest";
import { ActionFailure } from "../../src/domain/errors.js";
import { ScriptedExecutor, sleep } from "../helpers/scripted-executor.js";
import { addAccount, call, connect, emailCodeConnect, harness } from "./support.js";

/** A connect that asks for an emailed code until it gets 123456. */
function emailCodeScript(): ScriptedExecutor {
  return new ScriptedExecutor()
    .on("connect", emailCodeConnect)
    .on("rate-me", async () => {
      throw new ActionFailure("rate_limited", "You are doing that too often. Try again in a few minutes.");
    })
    .on("captcha-me", async (context) => {
      await context.challenge({ kind: "captcha", message: "Solve the puzzle.", resolvedOnPage: (signal) => sleep(60_000, signal) });
      return {};
    });
}

describe("MCP tools over the engine", () => {
  it("run_action stops at needs_input with the challenge; answer_challenge resumes it to succeeded", async () => {
    const h = await harness({ executor: emailCodeScript() });
    const client = await connect(h);
    const accountId = await addAccount(h);

    const paused = await call(client, "run_action", { account_id: accountId, type: "connect", params: {}, wait_seconds: 5 });
    expect(paused.isError).toBeFalsy();
    expect(paused.data).toMatchObject({ object: "action", status: "needs_input", challenge: { kind: "email_code", message: "We emailed a code to c***@example.com." } });
    const challenge = paused.data.challenge;
    expect(challenge.sign_in_url).toMatch(/^http:\/\/127\.0\.0\.1:8787\/live\//);
    expect(paused.text).toContain("needs_input");
    expect(paused.text).toContain("We emailed a code to c***@example.com.");
    expect(paused.text).toContain(challenge.sign_in_url);
    expect(paused.text).toContain(challenge.expires_at);
    expect(paused.text).toContain("Send the code from the email as the answer.");
    expect(paused.text).toContain("answer_challenge");

    const done = await call(client, "answer_challenge", { action_id: paused.data.id, answer: "123456", wait_seconds: 5 });
    expect(done.isError).toBeFalsy();
    expect(done.data).toMatchObject({ id: paused.data.id, status: "succeeded", result: { signed_in: true }, cost: 1 });
    expect(done.data).not.toHaveProperty("challenge");
    expect(done.text).toContain("succeeded");
  });

  it("a refused answer brings the action back to needs_input and says so; the right code then succeeds", async () => {
    const h = await harness({ executor: emailCodeScript() });
    const client = await connect(h);
    const paused = await call(client, "run_action", { account_id: await addAccount(h), type: "connect", wait_seconds: 5 });
    const refused = await call(client, "answer_challenge", { action_id: paused.data.id, answer: "000000", wait_seconds: 5 });
    expect(refused.isError).toBeFalsy();
    expect(refused.data.status).toBe("needs_input");
    expect(refused.data.challenge.message).toContain("Your answer was refused: That code is not right. 2 attempts left.");
    expect(refused.data.challenge.expires_at).toBe(paused.data.challenge.expires_at);
    expect(refused.text).toContain("Your answer was refused");
    const done = await call(client, "answer_challenge", { action_id: paused.data.id, answer: "123456", wait_seconds: 5 });
    expect(done.data.status).toBe("succeeded");
  });

  it("a captcha cannot be answered with text: a conflict error pointing at sign_in_url", async () => {
    const h = await harness({ executor: emailCodeScript() });
    const client = await connect(h);
    const paused = await call(client, "run_action", { account_id: await addAccount(h), type: "post", params: { text: "captcha-me" }, wait_seconds: 5 });
    expect(paused.data.challenge.kind).toBe("captcha");
    expect(paused.text).toContain("cannot be answered with answer_challenge");
    const refused = await call(client, "answer_challenge", { action_id: paused.data.id, answer: "solved" });
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/^conflict: /);
    expect(refused.text).toContain(paused.data.challenge.sign_in_url);
  });

  it("a failed action is a normal result whose text gives the error code and the recommended response", async () => {
    const h = await harness({ executor: emailCodeScript() });
    const client = await connect(h);
    const failed = await call(client, "run_action", { account_id: await addAccount(h), type: "post", params: { text: "rate-me" }, wait_seconds: 5 });
    expect(failed.isError).toBeFalsy();
    expect(failed.data).toMatchObject({ status: "failed", error: { code: "rate_limited", message: "You are doing that too often. Try again in a few minutes." } });
    expect(failed.text).toContain("rate_limited");
    expect(failed.text).toContain("Space out actions on this account; try later.");
  });

  it("request-level errors are isError results with the REST codes and create nothing", async () => {
    const h = await harness({ executor: emailCodeScript() });
    const client = await connect(h);
    const unknown = await call(client, "run_action", { account_id: "acc_nope", type: "post", params: { text: "hi" } });
    expect(unknown.isError).toBe(true);
    expect(unknown.text).toMatch(/^not_found: No such account\./);
    const badParams = await call(client, "run_action", { account_id: await addAccount(h), type: "post", params: { txt: "hi" } });
    expect(badParams.isError).toBe(true);
    expect(badParams.text).toMatch(/^invalid_request: The params do not fit a post action\./);
    const badShape = await call(client, "get_action", { action_id: 42 });
    expect(badShape.isError).toBe(true);
    expect(badShape.text).toContain("action_id");
    const nothing = await call(client, "update_account", { account_id: await addAccount(h, "dave") });
    expect(nothing.isError).toBe(true);
    expect(nothing.text).toMatch(/^invalid_request: give at least one of/);
    expect(await h.store.actions.list({ workspaceId: h.workspaceId, limit: 10 })).toHaveLength(0);
  });

  it("a read-only key may read but is refused run_action with forbidden", async () => {
    const h = await harness({ executor: emailCodeScript() });
    const accountId = await addAccount(h);
    const client = await connect(h, { principal: (await h.engine.keys.authenticate(await h.key("read_only")))! });
    const refused = await call(client, "run_action", { account_id: accountId, type: "post", params: { text: "hi" } });
    expect(refused.isError).toBe(true);
    expect(refused.text).toBe("forbidden: This key (role read_only) may not run, answer or cancel actions.\nDetails: {\"role\":\"read_only\"}");
    expect((await call(client, "list_accounts")).data.data).toHaveLength(1);
  });

  it("the same idempotency_key runs the action once and returns it again", async () => {
    const h = await harness({ executor: emailCodeScript() });
    const client = await connect(h);
    const args = { account_id: await addAccount(h), type: "post", params: { text: "once" }, idempotency_key: "k-1", wait_seconds: 5 };
    const first = await call(client, "run_action", args);
    const again = await call(client, "run_action", args);
    expect(again.data.id).toBe(first.data.id);
    expect(again.text).toContain("already ran");
    expect((h.executor as ScriptedExecutor).started).toEqual([first.data.id]);
    const changed = await call(client, "run_action", { ...args, params: { text: "other" } });
    expect(changed.isError).toBe(true);
    expect(changed.text).toMatch(/^invalid_request: /);
  });
});
