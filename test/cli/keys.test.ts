import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, expect, it } from "vitest";
import { CLI, startServe, type ServeProcess } from "../helpers/processes.js";

// `keys create | list | revoke` as an operator runs them: real processes on one data dir, while
// a `serve` is running on it. Each test starts processes that may each take START_DEADLINE_MS on a
// machine whose every core is taken (slow is not broken): their deadline is a multiple of it.
const run = promisify(execFile);
const dataDir = mkdtempSync(join(tmpdir(), "action-service-keys-"));
let service: ServeProcess | undefined;

afterAll(async () => {
  if (service && service.child.exitCode === null) await service.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function keys(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, "keys", ...args], { env: { ...process.env, ACTION_SERVICE_DATA_DIR: dataDir } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

it("lists keys without their secret, and a revoked key is refused at once by a running serve, on REST and MCP", async () => {
  service = await startServe({ dataDir, sandboxUrl: "http://127.0.0.1:9", env: { ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "100000" } });
  const created = await keys("create", "--role", "operator");
  expect(created.code).toBe(0);
  expect(created.stdout).toMatch(/^Created an operator key for workspace "default"/);
  const key = created.stdout.trim().split("\n").at(-1)!;
  expect(key).toMatch(/^as_[A-Za-z0-9_-]{43}$/);

  const listed = await keys("list");
  expect(listed.code).toBe(0);
  const lines = listed.stdout.trim().split("\n");
  expect(lines).toHaveLength(2);
  expect(lines[0]).toMatch(/^key_\S+ {2}as_\S{7}… {2}admin +workspace "default" {2}created \S+ {2}active$/);
  const line = lines.find((candidate) => candidate.includes(key.slice(0, 10)))!;
  expect(line).toMatch(/operator +workspace "default" +created \S+ +active$/);
  expect(listed.stdout).not.toContain(key);
  expect(listed.stdout).not.toContain(service.firstKey!);
  const id = line.split(" ")[0]!;

  const credits = (bearer: string) => fetch(`${service!.url}/v1/credits`, { headers: { authorization: `Bearer ${bearer}` } });
  expect((await credits(key)).status).toBe(200);
  const mcp = new Client({ name: "keys-test", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${service.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  expect((await mcp.callTool({ name: "get_credits", arguments: {} })).isError).toBeFalsy();

  const revoked = await keys("revoke", id);
  expect(revoked.code).toBe(0);
  expect(revoked.stdout).toContain(`Revoked ${id}`);
  // The running serve refuses it from the next request: REST, and the MCP session it had open.
  const refused = await credits(key);
  expect(refused.status).toBe(401);
  expect((await refused.json()) as unknown).toMatchObject({ error: { code: "unauthorized" } });
  await expect(mcp.callTool({ name: "get_credits", arguments: {} })).rejects.toThrow(/unauthorized.*The API key is not valid/);
  await mcp.close().catch(() => undefined);
  // The other key is untouched.
  expect((await credits(service.firstKey!)).status).toBe(200);

  expect((await keys("list")).stdout).toMatch(new RegExp(`${id} .* revoked \\S+$`, "m"));
  const again = await keys("revoke", id);
  expect(again.code).toBe(0);
  expect(again.stdout).toContain("was already revoked");
}, 180_000);

it("a bad id or workspace is a clear error that changes nothing", async () => {
  const before = (await keys("list")).stdout;
  const unknown = await keys("revoke", "key_nope");
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toContain("No key key_nope: `action-service keys list` shows every key's id.");
  const missing = await keys("revoke");
  expect(missing.code).toBe(2);
  expect(missing.stderr).toContain("keys revoke takes one key id");
  const workspace = await keys("list", "--workspace", "nope");
  expect(workspace.code).toBe(1);
  expect(workspace.stderr).toContain('No workspace named "nope".');
  expect((await keys("list")).stdout).toBe(before);
}, 180_000);
