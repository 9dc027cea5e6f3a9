import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/api/app.js";
import { silentLogger } from "../../src/engine/logger.js";
import { RateLimiter } from "../../src/engine/access/index.js";
import { listen } from "../../src/main.js";
import { mountMcpHttp, type McpHttpEndpoint } from "../../src/mcp/http.js";
import { ScriptedExecutor, sleep } from "../helpers/scripted-executor.js";
import { addAccount, harness } from "./support.js";

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/** Reads SSE events from a response until `done` says stop (or the stream ends). */
async function readEvents(response: Response, done: (events: { id?: string; data: string }[]) => boolean): Promise<{ id?: string; data: string; retry?: string }[]> {
  const events: { id?: string; data: string; retry?: string }[] = [];
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  while (!done(events)) {
    const { value, done: ended } = await reader.read();
    if (ended) break;
    buffer += value;
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event: { id?: string; data: string; retry?: string } = { data: "" };
      for (const line of block.split("\n")) {
        if (line.startsWith("id: ")) event.id = line.slice(4);
        else if (line.startsWith("data: ")) event.data += line.slice(6);
        else if (line.startsWith("retry: ")) event.retry = line.slice(7);
      }
      events.push(event);
    }
  }
  await reader.cancel().catch(() => undefined);
  return events;
}

describe("resumable Streamable HTTP", () => {
  it("a long wait cut by a proxy is resumed with Last-Event-ID and still delivers the tool result", async () => {
    const h = await harness({ executor: new ScriptedExecutor().on("post", async (context) => { await sleep(1_500, context.signal); return { post_id: "p1" }; }) });
    let endpoint!: McpHttpEndpoint;
    const limiter = new RateLimiter(600, h.clock);
    const app = createApp({ engine: h.engine, limiter, extend: (hono) => (endpoint = mountMcpHttp(hono, h.engine, { allowedHosts: ["127.0.0.1"], publicUrl: () => "http://127.0.0.1:8787", limiter, logger: silentLogger })) });
    const server = await listen(app, "127.0.0.1", 0);
    stops.push(async () => {
      await endpoint.close();
      await server.close();
    });
    const url = `http://127.0.0.1:${server.port}/mcp`;
    const headers = { authorization: `Bearer ${h.adminKey}`, "content-type": "application/json", accept: "application/json, text/event-stream" };
    const init = await fetch(url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "raw", version: "1" } } }) });
    const session = { ...headers, "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": LATEST_PROTOCOL_VERSION };
    await init.body?.cancel();
    await (await fetch(url, { method: "POST", headers: session, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) })).body?.cancel();

    const proxy = new AbortController();
    const call = await fetch(url, {
      method: "POST",
      signal: proxy.signal,
      headers: session,
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "run_action", arguments: { account_id: await addAccount(h), type: "post", params: { text: "cut" }, wait_seconds: 10 } } }),
    });
    // The priming event says where to resume and how soon to retry; then the "proxy" cuts the stream.
    const [priming] = await readEvents(call, (events) => events.length >= 1);
    expect(priming!.id).toBeTruthy();
    expect(priming!.retry).toBe("1000");
    proxy.abort();
    // The server notices the dropped connection, then takes the resumption.
    let resumed: Response | undefined;
    for (let attempt = 0; attempt < 20; attempt++) {
      resumed = await fetch(url, { method: "GET", headers: { ...session, "last-event-id": priming!.id! } });
      if (resumed.status !== 409) break;
      await resumed.body?.cancel();
      await sleep(50);
    }

    expect(resumed!.status).toBe(200);
    const events = await readEvents(resumed!, (seen) => seen.some((event) => event.data.includes('"id":2')));
    const result = JSON.parse(events.find((event) => event.data.includes('"id":2'))!.data);
    expect(result.result.structuredContent).toMatchObject({ status: "succeeded", result: { post_id: "p1" } });
  });
});
