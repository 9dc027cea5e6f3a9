import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLiveService, type LiveService } from "../helpers/live-service.js";

let live: LiveService;
let client: Client;

beforeAll(async () => {
  live = await startLiveService();
  client = new Client({ name: "sandbox-round-trip", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${live.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${live.key}` } } }));
  await client.listTools();
});
afterAll(async () => {
  await client?.close();
  await live?.close();
});

async function call(name: string, args: Record<string, unknown>): Promise<{ data: any; text: string; isError: boolean }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  return { data: result.structuredContent, text: result.content.map((block) => (block.type === "text" ? block.text : "")).join("\n"), isError: result.isError === true };
}

describe("MCP against the real sandbox", () => {
  it("connect_account pauses at needs_input with an email code; answer_challenge completes it; run_action then posts", async () => {
    const connected = await call("connect_account", { platform: "sandbox", username: "carol", password: "sandbox-password", wait_seconds: 30 });
    expect(connected.isError).toBe(false);
    const action = connected.data.action;
    expect(action.status).toBe("needs_input");
    expect(action.challenge).toMatchObject({ kind: "email_code" });
    expect(connected.text).toContain(action.challenge.sign_in_url);
    expect(connected.text).not.toContain("sandbox-password");

    const [mail] = await live.sandboxApi("GET", "/_sandbox/outbox?to=carol");
    const answered = await call("answer_challenge", { action_id: action.id, answer: mail.code, wait_seconds: 30 });
    expect(answered.data).toMatchObject({ status: "succeeded", result: { signed_in: true, profile: { handle: "carol" } } });

    const text = `Posted through MCP ${Date.now()}`;
    const posted = await call("run_action", { account_id: connected.data.account.id, type: "post", params: { text }, wait_seconds: 30 });
    expect(posted.data.status).toBe("succeeded");
    const posts = (await live.sandboxApi("GET", "/_sandbox/posts?author=carol")) as { text: string }[];
    expect(posts.filter((post) => post.text === text)).toHaveLength(1);

    const again = await call("run_action", { account_id: connected.data.account.id, type: "post", params: { text }, wait_seconds: 30 });
    expect(again.isError).toBe(false);
    expect(again.data).toMatchObject({ status: "failed", error: { code: "rejected" } });
    expect(again.text).toContain("Read the message, change the request, retry.");
  });
});
