import { describe, expect, it } from "vitest";
import { TOOLS } from "../../src/mcp/tools/index.js";
import { ScriptedExecutor } from "../helpers/scripted-executor.js";
import { call, connect, harness } from "./support.js";

const PASSWORD = "correct-horse-battery";
const NEW_PASSWORD = "staple-horse-battery";
const TOTP_SECRET = "JBSWY3DPEHPK3PXP";

function script(): ScriptedExecutor {
  return new ScriptedExecutor()
    .on("connect", async (context) => {
      await context.markConnected({ handle: "carol", name: "Carol" });
      return { signed_in: true, profile: { handle: "carol", name: "Carol" } };
    })
    .on("post", async (context) => {
      const answer = await context.challenge({ kind: "other", message: "Type the word on the card." });
      return { post_id: "p1", word: answer };
    });
}

describe("MCP tool contract", () => {
  it("every tool answers with structuredContent that fits its output schema, and no result carries a secret", async () => {
    const h = await harness({ executor: script() });
    const client = await connect(h);
    const results: Record<string, Awaited<ReturnType<typeof call>>> = {};
    const run = async (name: string, args: Record<string, unknown> = {}) => {
      // The SDK client checks structuredContent against the listed outputSchema and throws on a mismatch.
      const result = await call(client, name, args);
      expect(result.isError, `${name}: ${result.text}`).toBeFalsy();
      results[name] = result;
      return result;
    };

    await run("list_platforms");
    await run("get_credits");
    const connected = await run("connect_account", { platform: "sandbox", username: "carol", password: PASSWORD, totp_secret: TOTP_SECRET, wait_seconds: 5 });
    expect(connected.data.action).toMatchObject({ type: "connect", status: "succeeded" });
    expect(connected.data.account).toMatchObject({ username: "carol", status: "connected", has_password: true, has_totp_secret: true, profile: { handle: "carol" } });
    const accountId = connected.data.account.id;
    await run("update_account", { account_id: accountId, password: NEW_PASSWORD, totp_secret: null });
    expect(results.update_account!.data).toMatchObject({ has_password: true, has_totp_secret: false });
    await run("list_accounts");
    await run("check_account", { account_id: accountId });
    expect(results.check_account!.data).toMatchObject({ id: accountId, status: "connected" });
    await run("create_sign_in_link", { account_id: accountId });
    expect(results.create_sign_in_link!.data.url).toMatch(/\/live\/[A-Za-z0-9_-]{43}$/);
    const paused = await run("run_action", { account_id: accountId, type: "post", params: { text: "hello" }, wait_seconds: 5 });
    expect(paused.data.status).toBe("needs_input");
    await run("get_action", { action_id: paused.data.id, wait_seconds: 0 });
    await run("answer_challenge", { action_id: paused.data.id, answer: "orange", wait_seconds: 5 });
    expect(results.answer_challenge!.data).toMatchObject({ status: "succeeded", result: { word: "orange" } });
    const another = await run("run_action", { account_id: accountId, type: "post", params: { text: "again" }, wait_seconds: 5 });
    await run("cancel_action", { action_id: another.data.id });
    expect(results.cancel_action!.data).toMatchObject({ status: "canceled", cost: 0 });
    await run("list_actions", { account_id: accountId, limit: 1 });
    expect(results.list_actions!.data.data).toHaveLength(1);
    expect(results.list_actions!.data.next_cursor).toBeTypeOf("string");
    await run("top_up_credits", { credits: 10 });
    expect(results.top_up_credits!.text).toContain("PAYMENT-REQUIRED: ");
    expect(results.top_up_credits!.data).toMatchObject({ requirements: { x402Version: 2, accepts: [{ scheme: "exact", amount: "100000" }] } });
    await run("forward_message", { account_id: accountId, channel: "email", text: "Your verification code is 482913" });
    expect(results.forward_message!.data).toMatchObject({ object: "message", channel: "email" });
    expect(results.forward_message!.data.used_for).toBeUndefined();
    await run("send_feedback", { message: "The post button moved.", action_id: another.data.id });
    expect(results.send_feedback!.data).toMatchObject({ object: "feedback", message: "The post button moved.", action_id: another.data.id, type: "post", has_screenshot: false });
    // A routine's tools (save_routine, which needs a browser_steps run on a real page, is checked in routines.test.ts, through this same client).
    expect((await h.request("POST", "/v1/routines", { body: { platform: "sandbox", name: "greet", params: { type: "object", properties: { text: { type: "string" } } }, steps: [{ goto: "/" }, { fill: { label: "Post" }, value: "{{text}}" }] } })).status).toBe(201);
    await run("list_routines", { platform: "sandbox" });
    expect(results.list_routines!.data.data).toMatchObject([{ name: "greet", version: 1 }]);
    await run("delete_routine", { name: "greet" });
    await run("remove_account", { account_id: accountId });
    expect(results.remove_account!.data).toEqual({ removed: true, account_id: accountId });

    expect(Object.keys(results).sort()).toEqual(TOOLS.map((tool) => tool.name).filter((name) => name !== "save_routine").sort());
    const everything = JSON.stringify(results);
    for (const secret of [PASSWORD, NEW_PASSWORD, TOTP_SECRET, h.adminKey]) expect(everything).not.toContain(secret);
  });

  it("lists every tool with a title, object input and output schemas, and truthful annotations", async () => {
    const h = await harness();
    const client = await connect(h);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(TOOLS.map((tool) => tool.name).sort());
    for (const tool of tools) {
      expect(tool.title, tool.name).toBeTruthy();
      expect(tool.description!.length, tool.name).toBeGreaterThan(40);
      expect(tool.inputSchema.type).toBe("object");
      expect(tool.outputSchema?.type, tool.name).toBe("object");
      for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const) {
        expect(tool.annotations?.[hint], `${tool.name}.${hint}`).toBeTypeOf("boolean");
      }
    }
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool.annotations!]));
    expect(byName.run_action).toMatchObject({ readOnlyHint: false, openWorldHint: true, idempotentHint: false });
    expect(byName.answer_challenge).toMatchObject({ readOnlyHint: false, openWorldHint: true });
    expect(byName.connect_account).toMatchObject({ readOnlyHint: false, openWorldHint: true });
    for (const name of ["get_action", "list_actions", "list_accounts", "get_credits", "list_platforms"]) {
      expect(byName[name], name).toMatchObject({ readOnlyHint: true, destructiveHint: false, openWorldHint: false });
    }
    expect(byName.cancel_action).toMatchObject({ readOnlyHint: false, destructiveHint: true });
  });
});
