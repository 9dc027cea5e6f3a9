import { afterEach, describe, expect, it } from "vitest";
import { ActionFailure } from "../../src/domain/errors.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor } from "../helpers/scripted-executor.js";

let h: Harness;
afterEach(() => h.destroy());

describe("next_step", () => {
  it("says what a queued action waits for, how to answer a challenge, and what to do after a failure, in the surface's own operations", async () => {
    const executor = new ScriptedExecutor()
      .on("connect", async (context) => ((await context.challenge({ kind: "email_code", message: "Enter the code." })) ? { signed_in: true } : {}))
      .on("post", async () => {
        throw new ActionFailure("login_failed", "The platform refused the password.");
      });
    h = await createHarness({ executor });
    const accountId = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "carol", password: "pw" } })).json.id;
    const paused = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: accountId, type: "connect" } });
    expect(paused.json.status).toBe("needs_input");
    expect(paused.json.next_step).toContain(`POST /v1/actions/${paused.json.id}/answer`);
    const queued = await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text: "x" } } });
    expect(queued.json.status).toBe("queued");
    expect(queued.json.next_step).toContain(`Waits behind ${paused.json.id}`);
    expect(queued.json.next_step).toContain("needs_input");

    await h.request("POST", `/v1/actions/${paused.json.id}/answer?wait=5`, { body: { answer: "123456" } });
    const failed = await h.request("GET", `/v1/actions/${queued.json.id}?wait=5`);
    expect(failed.json).toMatchObject({ status: "failed", error: { code: "login_failed" } });
    expect(failed.json.next_step).toContain(`PATCH /v1/accounts/${accountId}`);
    // Over MCP the same action names MCP tools only.
    const overMcp = await h.engine.present((await h.store.actions.get(queued.json.id))!, "mcp");
    expect(overMcp.next_step).toContain("update_account");
    expect(overMcp.next_step).not.toMatch(/\/v1\/|PATCH|POST|GET /);
    // A succeeded action has none.
    expect((await h.request("GET", `/v1/actions/${paused.json.id}`)).json).not.toHaveProperty("next_step");
  });
});
