import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restClient, startServe, type ServeProcess } from "../helpers/processes.js";

// mcp.json.example, taken as a user takes it: only the placeholders replaced (the checkout's
// path, the data dir, the key, and the port of the serve this test started).
const REPO = join(import.meta.dirname, "..", "..");
const EXAMPLE = readFileSync(join(REPO, "mcp.json.example"), "utf8");

interface Entry {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  type?: string;
  url?: string;
  headers?: Record<string, string>;
}

let dataDir: string;
let serve: ServeProcess;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "action-service-launch-"));
  serve = await startServe({ dataDir, sandboxUrl: "http://127.0.0.1:9" });
});

afterAll(async () => {
  await serve?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

function entries(): Record<string, Entry> {
  const filled = EXAMPLE.replaceAll("/absolute/path/to/action-service/data", dataDir)
    .replaceAll("/absolute/path/to/action-service", REPO)
    .replaceAll("as_…", serve.firstKey!)
    .replaceAll("127.0.0.1:8787", new URL(serve.url).host);
  return (JSON.parse(filled) as { mcpServers: Record<string, Entry> }).mcpServers;
}

async function accountNames(client: Client): Promise<string[]> {
  const listed = (await client.callTool({ name: "list_accounts", arguments: {} })) as CallToolResult;
  expect(listed.isError).toBeFalsy();
  return (listed.structuredContent as { data: { username: string }[] }).data.map((account) => account.username);
}

describe("mcp.json.example works as written", () => {
  it("the stdio entry starts `node dist/cli.js mcp` on the service's data dir and sees its accounts", async () => {
    const api = restClient(() => serve.url, serve.firstKey!);
    expect((await api("POST", "/v1/accounts", { platform: "sandbox", username: "from-serve", password: "pw" })).status).toBe(201);
    const entry = entries()["action-service"]!;
    expect(entry.command).toBe("node");
    const client = new Client({ name: "claude-desktop", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({ command: entry.command!, args: entry.args!, env: { ...getDefaultEnvironment(), ...entry.env }, stderr: "pipe" }),
    );
    try {
      expect(await accountNames(client)).toContain("from-serve");
    } finally {
      await client.close();
    }
  });

  it("the HTTP entry reaches /mcp with its Authorization header; the mcp-remote entry names the same endpoint", async () => {
    const all = entries();
    const entry = all["action-service-http"]!;
    expect(entry.type).toBe("http");
    const client = new Client({ name: "http-client", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(entry.url!), { requestInit: { headers: entry.headers! } }));
    try {
      expect(await accountNames(client)).toContain("from-serve");
    } finally {
      await client.close();
    }
    // mcp-remote (a stdio bridge for clients that skip `type: http`) is given the same URL and header.
    const remote = all["action-service-remote"]!;
    expect(remote.args).toContain(entry.url);
    expect(remote.args!.join(" ").replace("${ACTION_SERVICE_KEY}", remote.env!.ACTION_SERVICE_KEY!)).toContain(`Authorization:${entry.headers!.Authorization}`);
  });
});
