import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult, ClientCapabilities } from "@modelcontextprotocol/sdk/types.js";
import { afterEach } from "vitest";
import type { Principal } from "../../src/domain/keys.js";
import { silentLogger } from "../../src/engine/logger.js";
import { createMcpServer } from "../../src/mcp/server.js";
import { createHarness, type Harness, type HarnessOptions } from "../helpers/harness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A harness (real SQLite, real engine, scripted platform) removed after the test. */
export function harness(options: HarnessOptions = {}): Harness {
  const h = createHarness(options);
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
  const server = createMcpServer({ engine: h.engine, principal: options.principal ?? h.engine.authenticate(h.adminKey)!, logger: silentLogger });
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

/** A tools/call result with its text block pulled out. */
export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult & { text: string; data: any }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((block) => (block.type === "text" ? block.text : "")).join("\n");
  return { ...result, text, data: result.structuredContent };
}

/** Adds an account straight through the engine (not under test here). */
export function addAccount(h: Harness, username = "carol"): string {
  return h.engine.createAccount(h.engine.authenticate(h.adminKey)!, { platform: "sandbox", username, password: "pw" }).id;
}
