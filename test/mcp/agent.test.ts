import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { ActionFailure } from "../../src/domain/errors.js";
import { ScriptedExecutor, eventually } from "../helpers/scripted-executor.js";
import { call, connect, harness } from "./support.js";

// What an agent reading only the tools, or a Claude Desktop user, meets: no dead ends.
describe("MCP for an agent on its own", () => {
  it("connect_account without a password hands out a sign-in link (offered as a URL elicitation), runs nothing and charges nothing", async () => {
    const h = await harness();
    const offered: { url: string; message: string }[] = [];
    const client = await connect(h, {
      capabilities: { elicitation: { url: {} } },
      setup: (c) =>
        c.setRequestHandler(ElicitRequestSchema, (request) => {
          const params = request.params as { url: string; message: string };
          offered.push({ url: params.url, message: params.message });
          return { action: "accept" };
        }),
    });
    const before = await h.store.ledger.balance(h.workspaceId);
    const result = await call(client, "connect_account", { platform: "sandbox", username: "owner-only" });
    expect(result.isError).toBeFalsy();
    expect(result.data.action).toBeUndefined();
    expect(result.data.sign_in_link.url).toMatch(/\/live\/[A-Za-z0-9_-]{43}$/);
    expect(result.text).toContain(result.data.sign_in_link.url);
    expect(result.text).toContain("nothing was charged");
    expect(await h.store.ledger.balance(h.workspaceId)).toBe(before);
    expect(await h.store.actions.list({ workspaceId: h.workspaceId, limit: 10 })).toHaveLength(0);
    await eventually(() => offered.length === 1);
    expect(offered[0]!.url).toBe(result.data.sign_in_link.url);
  });

  it("reuses the account of the same platform and username, and remove_account removes it", async () => {
    const h = await harness();
    const client = await connect(h);
    const first = await call(client, "connect_account", { platform: "sandbox", username: "Carol", password: "pw-1", wait_seconds: 5 });
    const again = await call(client, "connect_account", { platform: "sandbox", username: "carol", password: "pw-2", wait_seconds: 5 });
    expect(again.data.account.id).toBe(first.data.account.id);
    expect(again.text).toContain("reused account");
    expect(await h.store.accounts.getSecret(first.data.account.id, "password")).toBe("pw-2");
    expect((await call(client, "list_accounts")).data.data).toHaveLength(1);
    const removed = await call(client, "remove_account", { account_id: first.data.account.id });
    expect(removed.data).toEqual({ removed: true, account_id: first.data.account.id });
    expect((await call(client, "list_accounts")).data.data).toHaveLength(0);
    const gone = await call(client, "get_action", { action_id: first.data.action.id, wait_seconds: 0 });
    expect(gone.isError).toBeFalsy();
    expect((await call(client, "remove_account", { account_id: first.data.account.id })).text).toMatch(/^not_found/);
  });

  it("a connect the platform blocks carries a sign-in link and a next step in MCP tools, and costs nothing", async () => {
    const h = await harness({ executor: new ScriptedExecutor().on("connect", async () => { throw new ActionFailure("account_blocked", "The platform restricted this account."); }) });
    const client = await connect(h);
    const result = await call(client, "connect_account", { platform: "sandbox", username: "grace", password: "pw", wait_seconds: 5 });
    expect(result.data.action).toMatchObject({ status: "failed", error: { code: "account_blocked" }, cost: 0 });
    expect(result.data.action.next_step).toContain("create_sign_in_link");
    expect(result.data.sign_in_link.url).toMatch(/\/live\//);
    expect(result.text).toContain(result.data.sign_in_link.url);
    expect(JSON.stringify(result.data)).not.toMatch(/\/v1\/|PATCH /);
  });

  it("each half stands alone: list_platforms' text gives every type's params; the structured action carries next_step", async () => {
    const h = await harness();
    const client = await connect(h);
    const platforms = await call(client, "list_platforms");
    expect(platforms.text).toContain("post {text}");
    expect(platforms.text).toContain("lookup_person {handle} | {url}");
    expect(platforms.text).toContain("send_message {to, text}");
    expect(platforms.text).toMatch(/connect \{\} — 1 credit:/);
    expect(platforms.text).not.toContain("1 credits");
  });

  it("takes a wait_seconds above 50 as 50 with a note, declares only the capabilities it uses, and offers platforms as an enum", async () => {
    const h = await harness();
    const client = await connect(h);
    const accountId = (await call(client, "connect_account", { platform: "sandbox", username: "carol", password: "pw", wait_seconds: 5 })).data.account.id;
    const posted = await call(client, "run_action", { account_id: accountId, type: "post", params: { text: "hi" }, wait_seconds: 120 });
    expect(posted.isError).toBeFalsy();
    expect(posted.text).toContain("wait_seconds is at most 50");
    expect(client.getServerCapabilities()).not.toHaveProperty("logging");
    expect(client.getServerCapabilities()).toMatchObject({ tools: { listChanged: false }, resources: { subscribe: true, listChanged: false } });
    const { tools } = await client.listTools();
    const connectTool = tools.find((tool) => tool.name === "connect_account")!;
    expect((connectTool.inputSchema.properties as Record<string, { enum?: string[] }>).platform!.enum).toEqual(["sandbox"]);
    const refused = await call(client, "connect_account", { platform: "elsewhere", username: "x" });
    expect(refused.isError).toBe(true);
  });
});
