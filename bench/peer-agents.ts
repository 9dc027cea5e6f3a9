/**
 * The two agents of figure (j), each an MCP client posting on the sandbox's feed as a model would
 * drive it: the service's `run_action`, and `@playwright/mcp`'s browser tools on one tab. Each
 * counts its tool calls and the characters of text their results hand the model.
 */
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { CHROMIUM_ARGS } from "../src/browser/executable.js";

/** What one post cost the model: tool calls made, and characters of result text read. */
export interface PostCost {
  calls: number;
  chars: number;
}

/** What the agents need of an MCP client, 1.x (2025 era) or v2 (either era). */
interface ToolClient {
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}

/** The protocol era our agent speaks: a 2025 session (the 1.x client) or 2026-07-28 (the v2 client, pinned). */
export type AgentEra = "legacy" | "modern";

/** An MCP client that counts tool calls and the text of their results; a tool error throws. */
class CountingClient {
  #calls = 0;
  #chars = 0;

  constructor(
    readonly client: ToolClient,
    readonly label: string,
    readonly log: () => string = () => "",
  ) {}

  async call(name: string, args: Record<string, unknown>): Promise<{ text: string; structured: any }> {
    const result = (await this.client.callTool({ name, arguments: args })) as CallToolResult;
    const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
    this.#calls += 1;
    this.#chars += result.content.reduce((sum, part) => sum + (part.type === "text" ? part.text.length : 0), 0);
    if (result.isError) throw new Error(`${this.label}: ${name} ${JSON.stringify(args)} failed: ${text.slice(0, 2_000)}${this.log()}`);
    return { text, structured: result.structuredContent };
  }

  /** The calls and characters since the last `take()`. */
  take(): PostCost {
    const cost = { calls: this.#calls, chars: this.#chars };
    this.#calls = 0;
    this.#chars = 0;
    return cost;
  }
}

/** The service's MCP endpoint (Streamable HTTP, /mcp) with an API key: one `run_action` a post. */
export class ServiceAgent {
  #accountId = "";

  private constructor(readonly mcp: CountingClient) {}

  static async connect(serviceUrl: string, key: string, era: AgentEra = "legacy"): Promise<ServiceAgent> {
    const requestInit = { headers: { authorization: `Bearer ${key}` } };
    if (era === "modern") {
      const client = new ModernClient({ name: "bench-agent", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
      await client.connect(new ModernHttp(new URL("/mcp", serviceUrl), { requestInit }));
      return new ServiceAgent(new CountingClient(client, "action-service MCP (2026-07-28)"));
    }
    const client = new Client({ name: "bench-agent", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", serviceUrl), { requestInit }));
    return new ServiceAgent(new CountingClient(client, "action-service MCP"));
  }

  /** Adds and signs in the sandbox user, as an agent does once. */
  async connectAccount(handle: string, password: string): Promise<void> {
    const { text, structured } = await this.mcp.call("connect_account", { platform: "sandbox", username: handle, password, wait_seconds: 50 });
    if (structured?.action?.status !== "succeeded") throw new Error(`action-service MCP: connect_account did not succeed: ${text}`);
    this.#accountId = structured.account.id;
    this.mcp.take();
  }

  /** One post: `run_action` waits for the end; `get_action` (counted) only if it did not. */
  async post(text: string): Promise<PostCost> {
    let result = await this.mcp.call("run_action", { account_id: this.#accountId, type: "post", params: { text }, wait_seconds: 30 });
    while (result.structured?.status === "queued" || result.structured?.status === "running") {
      result = await this.mcp.call("get_action", { action_id: result.structured.id, wait_seconds: 30 });
    }
    if (result.structured?.status !== "succeeded") throw new Error(`action-service MCP: a post ended ${result.structured?.status}: ${result.text}`);
    return this.mcp.take();
  }

  close(): Promise<void> {
    return this.mcp.client.close();
  }
}

/** The line `- <role> "<name>" … [ref=…]` of an aria snapshot, as a model picks its target. */
function refOf(snapshot: string, role: string, name: string): string {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const ref = new RegExp(`- ${role} "${escaped}"[^\\n]*\\[ref=([^\\]\\s]+)\\]`).exec(snapshot)?.[1];
  if (!ref) throw new Error(`@playwright/mcp: no ${role} "${name}" in the snapshot:\n${snapshot.slice(0, 3_000)}`);
  return ref;
}

/**
 * `@playwright/mcp` over stdio, its own process (`node cli.js`) with this machine's Chromium,
 * headless, its profile in memory, one tab. Its 0.0.83 results name a snapshot file after an
 * action; the snapshot itself comes inline from `browser_snapshot`, so a post is navigate,
 * snapshot, type, click, wait for: five calls.
 */
export class PlaywrightMcpAgent {
  private constructor(
    readonly mcp: CountingClient,
    readonly transport: StdioClientTransport,
  ) {}

  static async start(options: { chromium: string; dir: string }): Promise<PlaywrightMcpAgent> {
    const cli = join(dirname(createRequire(import.meta.url).resolve("@playwright/mcp/package.json")), "cli.js");
    // The same Chromium flags as the service's (no background traffic, no GPU), through its config.
    const config = join(options.dir, "playwright-mcp.json");
    writeFileSync(config, JSON.stringify({ browser: { launchOptions: { args: CHROMIUM_ARGS } } }));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cli, "--headless", "--isolated", "--no-sandbox", "--executable-path", options.chromium, "--config", config, "--output-dir", join(options.dir, "output")],
      cwd: options.dir,
      stderr: "pipe",
    });
    let log = "";
    transport.stderr?.on("data", (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4_000)));
    const client = new Client({ name: "bench-agent", version: "1.0.0" });
    await client.connect(transport);
    return new PlaywrightMcpAgent(new CountingClient(client, "@playwright/mcp", () => (log ? `\nits stderr: ${log}` : "")), transport);
  }

  /** The `node cli.js` process: the root of the peer's server tree. */
  get pid(): number {
    const pid = this.transport.pid;
    if (pid === null) throw new Error("@playwright/mcp is not running");
    return pid;
  }

  /** Navigates to `url` and reads the page's snapshot, checking the page is where it should be. */
  async #open(url: string, expectedPath: string): Promise<string> {
    await this.mcp.call("browser_navigate", { url });
    const { text } = await this.mcp.call("browser_snapshot", {});
    const at = /Page URL: (\S+)/.exec(text)?.[1];
    if (!at || new URL(at).pathname !== expectedPath) throw new Error(`@playwright/mcp: ${url} showed ${at ?? "no page"}, not ${expectedPath}`);
    return text;
  }

  /** Signs the tab in through the sign-in form, as an agent does once. */
  async signIn(sandboxUrl: string, handle: string, password: string): Promise<void> {
    const form = await this.#open(`${sandboxUrl}/feed`, "/login");
    await this.mcp.call("browser_type", { element: "Username field", target: refOf(form, "textbox", "Username"), text: handle });
    await this.mcp.call("browser_type", { element: "Password field", target: refOf(form, "textbox", "Password"), text: password });
    const { text } = await this.mcp.call("browser_click", { element: "Sign in button", target: refOf(form, "button", "Sign in") });
    if (!text.includes(`Page URL: ${sandboxUrl}/feed`)) throw new Error(`@playwright/mcp: signing in did not reach the feed:\n${text}`);
    this.mcp.take();
  }

  async post(sandboxUrl: string, text: string): Promise<PostCost> {
    const feed = await this.#open(`${sandboxUrl}/feed`, "/feed");
    await this.mcp.call("browser_type", { element: "Post composer", target: refOf(feed, "textbox", "What's on your mind?"), text });
    await this.mcp.call("browser_click", { element: "Post button", target: refOf(feed, "button", "Post") });
    const waited = await this.mcp.call("browser_wait_for", { text: "Your post is live." });
    if (!waited.text.includes("Waited for Your post is live.")) throw new Error(`@playwright/mcp: the post was not confirmed:\n${waited.text}`);
    return this.mcp.take();
  }

  close(): Promise<void> {
    return this.mcp.client.close();
  }
}
