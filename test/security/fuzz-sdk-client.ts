import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { McpSdkCase } from "./fuzz-cases.js";
import type { Resolve } from "./fuzz-send.js";
import { judgeMessages, type Verdict } from "./fuzz-verdict.js";
import type { World } from "./world.js";

/** Calls tools through the SDK's own client, one connected client per key. */
export class McpClients {
  readonly #clients = new Map<string, Client>();
  constructor(private readonly world: World) {}

  async call(spec: McpSdkCase, resolve: Resolve): Promise<Verdict> {
    const client = await this.#client(spec.auth);
    const args = JSON.parse(resolve(JSON.stringify(spec.args) ?? "null")) as Record<string, unknown>;
    try {
      const result = (await client.callTool({ name: spec.tool, arguments: args })) as CallToolResult;
      return judgeMessages([{ result }], result.isError ? "isError" : "ok");
    } catch (error) {
      // A JSON-RPC error from the server is a refusal; anything else (a timeout, output off its schema) is not.
      if (error instanceof McpError) return judgeMessages([{ error: { code: error.code, message: error.message } }], "jsonrpc-error");
      // Raw cases may open sessions with the same key, and the oldest of a key's sessions is closed to make room.
      if (error instanceof StreamableHTTPError && error.code === 404) {
        this.#clients.delete(spec.auth);
        await client.close();
        return { status: "session-evicted", rejected: true, problems: [] };
      }
      return { status: "client-error", rejected: false, problems: [`SDK client failed: ${String(error)}`] };
    }
  }

  async #client(key: McpSdkCase["auth"]): Promise<Client> {
    let client = this.#clients.get(key);
    if (!client) {
      client = new Client({ name: "fuzz-sdk", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${this.world.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${this.world.keys[key]}` } } }));
      // Caches the output schemas, so the client checks every structured result too.
      await client.listTools();
      this.#clients.set(key, client);
    }
    return client;
  }

  async close(): Promise<void> {
    for (const client of this.#clients.values()) await client.close();
  }
}
