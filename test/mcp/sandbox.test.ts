import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from "@modelcontextprotocol/client";
import type { Browser } from "playwright";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { call as callTool } from "../helpers/mcp.js";
import { launchChromium } from "../sandbox/support.js";

let live: LiveService;
let client: Client;
let browser: Browser | undefined;

beforeAll(async () => {
  live = await startLiveService();
  client = new Client({ name: "sandbox-round-trip", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${live.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${live.key}` } } }));
  await client.listTools();
});
afterAll(async () => {
  await browser?.close();
  await client?.close();
  await live?.close();
});

const call = (name: string, args: Record<string, unknown>) => callTool(client, name, args);

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

  it("2026-07-28: an e-mailed code is input_required; a person types it on the page it points at (real Chromium), and the retry returns succeeded", async () => {
    browser ??= await launchChromium();
    const handle = `mrtr_${Date.now().toString(36)}`;
    await live.sandboxApi("POST", "/_sandbox/users", { handle, name: `Modern ${handle}`, password: "sandbox-password", challenge: "email" });
    const modern = new ModernClient({ name: "sandbox-modern", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } }, capabilities: { elicitation: { url: {} } } });
    const opened: string[] = [];
    // The client shows the link; the person opens it, reads the mail and types the code in the page's answer box.
    modern.setRequestHandler("elicitation/create", async (request) => {
      const url = (request.params as { url: string }).url;
      opened.push(url);
      const page = await browser!.newPage();
      await page.goto(url);
      const [mail] = await live.sandboxApi("GET", `/_sandbox/outbox?to=${handle}`);
      await page.getByLabel("Code").fill(mail.code);
      await page.getByRole("button", { name: "Send answer" }).click();
      await page.locator("#status").getByText("succeeded").waitFor({ timeout: 30_000 }).catch(() => undefined);
      await page.close();
      return { action: "accept" };
    });
    await modern.connect(new ModernHttp(new URL(`${live.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${live.key}` } } }));
    try {
      expect(modern.getProtocolEra()).toBe("modern");
      const result = await modern.callTool({ name: "connect_account", arguments: { platform: "sandbox", username: handle, password: "sandbox-password", wait_seconds: 30 } });
      expect(opened).toHaveLength(1);
      expect(opened[0]).toMatch(/\/live\//);
      expect(result.structuredContent).toMatchObject({ action: { status: "succeeded", result: { signed_in: true, profile: { handle } } } });
    } finally {
      await modern.close();
    }
  });
});
