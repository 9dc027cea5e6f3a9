import { request } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { ScriptedExecutor } from "../helpers/scripted-executor.js";
import { addAccount, harness, serveMcpHttp } from "./support.js";

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

async function serve(options: { perMinute?: number; maxSessionsPerKey?: number } = {}) {
  const h = await harness({ executor: new ScriptedExecutor().on("post", async () => ({ post_id: "p1" })) });
  const { url, endpoint } = await serveMcpHttp(h, { perMinute: options.perMinute ?? 600, ...(options.maxSessionsPerKey ? { maxSessionsPerKey: options.maxSessionsPerKey } : {}) });
  const connectClient = async (key: string) => {
    const client = new Client({ name: "http-test", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
    await client.connect(transport);
    stops.push(() => client.close());
    return { client, transport };
  };
  const post = (headers: Record<string, string>, body: unknown = INITIALIZE) =>
    fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }, body: JSON.stringify(body) });
  return { h, url, endpoint: () => endpoint, connectClient, post };
}

function statusWithHost(url: string, host: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method: "POST", headers: { host, authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json, text/event-stream" } }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    outgoing.on("error", reject);
    outgoing.end(JSON.stringify(INITIALIZE));
  });
}

describe("MCP over Streamable HTTP", () => {
  it("serves the tools to a client with a key, runs an action, and ends the session on DELETE", async () => {
    const { h, endpoint, connectClient, post } = await serve();
    const listeners = h.engine.core.lifecycle.events.listenerCount("change");
    const { client, transport } = await connectClient(h.adminKey);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain("run_action");
    const result = (await client.callTool({ name: "run_action", arguments: { account_id: await addAccount(h), type: "post", params: { text: "hi" }, wait_seconds: 5 } })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ status: "succeeded", result: { post_id: "p1" } });
    expect(endpoint().sessionCount).toBe(1);

    const sessionId = transport.sessionId!;
    // The session belongs to the key that opened it: another valid key cannot use it.
    const other = await post({ authorization: `Bearer ${await h.key("admin")}`, "mcp-session-id": sessionId }, { jsonrpc: "2.0", id: 2, method: "tools/list" });
    expect(other.status).toBe(404);

    await transport.terminateSession();
    expect(endpoint().sessionCount).toBe(0);
    // The ended session let go of the engine: nothing of it is left behind.
    expect(h.engine.core.lifecycle.events.listenerCount("change")).toBe(listeners);
    const after = await post({ authorization: `Bearer ${h.adminKey}`, "mcp-session-id": sessionId }, { jsonrpc: "2.0", id: 3, method: "tools/list" });
    expect(after.status).toBe(404);
  });

  it("refuses a missing or unknown key with 401 and a bad Origin or Host with 403", async () => {
    const { h, url, post, endpoint } = await serve();
    const missing = await post({});
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ error: { code: "unauthorized" } });
    expect((await post({ authorization: "Bearer not-a-key" })).status).toBe(401);

    const badOrigin = await post({ authorization: `Bearer ${h.adminKey}`, origin: "http://evil.example" });
    expect(badOrigin.status).toBe(403);
    expect(await badOrigin.json()).toMatchObject({ error: { code: "forbidden" } });
    // fetch will not send a Host of our choosing; a DNS-rebinding page's request would carry its own.
    expect(await statusWithHost(url, "evil.example:8787", h.adminKey)).toBe(403);
    expect(endpoint().sessionCount).toBe(0);

    // The scheme counts: the same host and port over another scheme is another origin.
    expect((await post({ authorization: `Bearer ${h.adminKey}`, origin: "https://127.0.0.1:8787" })).status).toBe(403);
    expect((await post({ authorization: `Bearer ${h.adminKey}`, origin: "null" })).status).toBe(403);
    const sameOrigin = await post({ authorization: `Bearer ${h.adminKey}`, origin: "http://127.0.0.1:8787" });
    expect(sameOrigin.status).toBe(200);
    expect(sameOrigin.headers.get("mcp-session-id")).toBeTruthy();
    await sameOrigin.body?.cancel();
  });

  it("shares the key's rate limit with REST: once REST has used it up, /mcp answers 429 with Retry-After", async () => {
    const { h, post, url } = await serve({ perMinute: 5 });
    const key = await h.key("read_only");
    const credits = (): Promise<Response> => fetch(url.replace(/\/mcp$/, "/v1/credits"), { headers: { authorization: `Bearer ${key}` } });
    for (let i = 0; i < 4; i++) expect((await credits()).status).toBe(200);
    const opened = await post({ authorization: `Bearer ${key}` });
    expect(opened.status).toBe(200);
    await opened.body?.cancel();
    const limited = await post({ authorization: `Bearer ${key}` });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await limited.json()).toMatchObject({ jsonrpc: "2.0", error: { message: expect.stringContaining("too_many_requests") } });
    // And REST is refused too: one bucket for the key.
    expect((await credits()).status).toBe(429);
    // Another key is not affected.
    const other = await post({ authorization: `Bearer ${await h.key("read_only")}` });
    expect(other.status).toBe(200);
    await other.body?.cancel();
  });

  it("caps the sessions one key holds: a new one ends the key's least recently used", async () => {
    const { h, post, endpoint } = await serve({ maxSessionsPerKey: 3 });
    const key = await h.key("read_only");
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const response = await post({ authorization: `Bearer ${key}` });
      ids.push(response.headers.get("mcp-session-id")!);
      await response.body?.cancel();
    }
    expect(endpoint().sessionCount).toBe(3);
    const oldest = await post({ authorization: `Bearer ${key}`, "mcp-session-id": ids[0]! }, { jsonrpc: "2.0", id: 2, method: "tools/list" });
    expect(oldest.status).toBe(404);
    // Another key's sessions are its own.
    const another = await post({ authorization: `Bearer ${h.adminKey}` });
    await another.body?.cancel();
    expect(endpoint().sessionCount).toBe(4);
  });
});

