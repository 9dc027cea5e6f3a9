import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { Client as ModernClient } from "@modelcontextprotocol/client";
import { StdioClientTransport as ModernStdio } from "@modelcontextprotocol/client/stdio";
import { afterEach, describe, expect, it } from "vitest";
import { TOOLS } from "../../src/mcp/tools/index.js";

/** Built by `npm run build` (which `npm run setup` runs before `npm test`). */
const CLI = fileURLToPath(new URL("../../dist/cli.js", import.meta.url));
const PACKAGE = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };

const stops: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

describe("MCP over stdio (action-service mcp)", () => {
  it("answers tools/list, list_platforms and get_credits, with nothing but JSON-RPC on stdout", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "action-service-stdio-"));
    stops.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, "mcp"],
      env: { ...getDefaultEnvironment(), ACTION_SERVICE_DATA_DIR: dataDir, ACTION_SERVICE_FREE_CREDITS: "100", ACTION_SERVICE_PORT: "0" },
      stderr: "pipe",
    });
    const client = new Client({ name: "stdio-test", version: "1.0.0" });
    // A stray line on stdout (a log, a banner) breaks the JSON-RPC stream and lands here.
    const streamErrors: Error[] = [];
    client.onerror = (error) => void streamErrors.push(error);
    await client.connect(transport);
    stops.push(() => client.close());
    // The built service (dist/ is a bundle) still knows its own version.
    expect(client.getServerVersion()).toMatchObject({ name: "action-service", version: PACKAGE.version });

    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(TOOLS.map((tool) => tool.name).sort());

    const platforms = (await client.callTool({ name: "list_platforms", arguments: {} })) as CallToolResult;
    expect(platforms.isError).toBeFalsy();
    const names = (platforms.structuredContent as { data: { name: string }[] }).data.map((platform) => platform.name);
    expect(names).toContain("sandbox");

    const credits = (await client.callTool({ name: "get_credits", arguments: {} })) as CallToolResult;
    expect(credits.isError).toBeFalsy();
    expect(credits.structuredContent).toEqual({ balance: 100 });
    expect(streamErrors).toEqual([]);
  });

  it("speaks 2026-07-28 to a client pinned to it: server/discover, then the same tools, stateless", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "action-service-stdio-"));
    stops.push(() => rmSync(dataDir, { recursive: true, force: true }));
    // A subclass probes the server in place (the base class starts a second process to ask server/discover).
    class InPlaceStdio extends ModernStdio {}
    const transport = new InPlaceStdio({
      command: process.execPath,
      args: [CLI, "mcp"],
      env: { ...getDefaultEnvironment(), ACTION_SERVICE_DATA_DIR: dataDir, ACTION_SERVICE_FREE_CREDITS: "100", ACTION_SERVICE_PORT: "0" },
      stderr: "pipe",
    });
    const client = new ModernClient({ name: "stdio-modern-test", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(transport);
    stops.push(() => client.close());
    expect(client.getProtocolEra()).toBe("modern");
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(TOOLS.map((tool) => tool.name).sort());
    const credits = await client.callTool({ name: "get_credits", arguments: {} });
    expect(credits.structuredContent).toEqual({ balance: 100 });
  });
});
