import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { ClientCapabilities } from "@modelcontextprotocol/sdk/types.js";
import { afterEach } from "vitest";
import type { Principal } from "../../src/domain/keys.js";
import { silentLogger } from "../../src/engine/logger.js";
import { createApp } from "../../src/api/app.js";
import { RateLimiter } from "../../src/engine/access/index.js";
import type { Script } from "../helpers/scripted-executor.js";
import { listen } from "../../src/main.js";
import { mountMcpHttp, type McpHttpEndpoint } from "../../src/mcp/http.js";
import { createMcpServer } from "../../src/mcp/server.js";
import { createHarness, type Harness, type HarnessOptions } from "../helpers/harness.js";

export { call } from "../helpers/mcp.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A harness (real SQLite, real engine, scripted platform) removed after the test. */
export async function harness(options: HarnessOptions = {}): Promise<Harness> {
  const h = await createHarness(options);
  cleanups.push(() => h.destroy());
  return h;
}

export interface ConnectOptions {
  /** Defaults to the harness's admin key. */
  principal?: Principal;
  capabilities?: ClientCapabilities;
  /** Registers client handlers (e.g. elicitation) before the client connects. */
  setup?: (client: Client) => void;
}

/** The SDK's own client connected in-process to an MCP session over the harness's engine. */
export async function connect(h: Harness, options: ConnectOptions = {}): Promise<Client> {
  const server = createMcpServer({ engine: h.engine, principal: options.principal ?? (await h.engine.keys.authenticate(h.adminKey))!, logger: silentLogger });
  const client = new Client({ name: "test-client", version: "1.0.0" }, { capabilities: options.capabilities ?? {} });
  options.setup?.(client);
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  await client.connect(clientTransport);
  // Caches each tool's output schema, so every call below is validated by the client too.
  await client.listTools();
  cleanups.push(async () => {
    await client.close();
    await server.close();
  });
  return client;
}

/** Adds an account straight through the engine (not under test here). */
export async function addAccount(h: Harness, username = "carol"): Promise<string> {
  return (await h.engine.accounts.create((await h.engine.keys.authenticate(h.adminKey))!, { platform: "sandbox", username, password: "pw" })).id;
}

/** A connect that asks for an emailed code until it is given 123456 (each wrong one refused). */
export const emailCodeConnect: Script = async (context) => {
  for (;;) {
    const answer = await context.challenge({ kind: "email_code", message: "We emailed a code to c***@example.com." });
    if (answer === "123456") return { signed_in: true, profile: { handle: "carol", name: "Carol" } };
    await context.refuseAnswer("That code is not right.");
  }
};

/** `/mcp` of the harness's engine over real HTTP on 127.0.0.1 (Host and Origin checked), stopped after the test. */
export async function serveMcpHttp(h: Harness, options: { perMinute?: number; maxSessionsPerKey?: number } = {}): Promise<{ url: string; endpoint: McpHttpEndpoint }> {
  let endpoint!: McpHttpEndpoint;
  const limiter = new RateLimiter(options.perMinute ?? 100_000, h.clock);
  const policy = { allowedHosts: ["127.0.0.1"], publicUrl: () => "http://127.0.0.1:8787" };
  const extra = options.maxSessionsPerKey ? { maxSessionsPerKey: options.maxSessionsPerKey } : {};
  const app = createApp({ engine: h.engine, limiter, extend: (hono) => (endpoint = mountMcpHttp(hono, h.engine, { ...policy, limiter, logger: silentLogger, ...extra })) });
  const server = await listen(app, "127.0.0.1", 0);
  cleanups.push(async () => {
    await endpoint.close();
    await server.close();
  });
  return { url: `http://127.0.0.1:${server.port}/mcp`, endpoint };
}

/** A JSON-RPC answer to a raw request, with its HTTP status. */
export type Rpc = { status: number; result?: any; error?: { code: number; message: string; data?: any } };

const MODERN = "2026-07-28";

/** The 2026-07-28 per-request `_meta` envelope: the revision and what the client declares. */
export function modernEnvelope(capabilities: Record<string, unknown>): Record<string, unknown> {
  return { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": capabilities };
}

/**
 * Raw 2026-07-28 requests to `url`: the envelope in `_meta` (with `capabilities` unless a call
 * gives its own), and the headers the revision asks for (`Mcp-Name`: the tool, or the task).
 */
export function modernRpc(url: string, capabilities: Record<string, unknown>) {
  let ids = 0;
  return async (key: string, method: string, params: Record<string, unknown>, declared: Record<string, unknown> = capabilities): Promise<Rpc> => {
    const name = (params.name ?? params.taskId) as string | undefined;
    const response = await fetch(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
        ...(name ? { "mcp-name": name } : {}),
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: ++ids,
        method,
        params: { ...params, _meta: modernEnvelope(declared) },
      }),
    });
    const text = await response.text();
    // JSON, or an SSE stream whose last data line is the answer.
    const json = text.startsWith("{") ? JSON.parse(text) : JSON.parse(text.split("\n").filter((line) => line.startsWith("data: ")).at(-1)!.slice(6));
    return { status: response.status, ...json };
  };
}

