import { readdirSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { readRawFile } from "../helpers/raw-file.js";
import { call as callTool } from "../mcp/support.js";

// A browser_steps fill marked secret against the real sandbox with real Chromium, through real HTTP
// and a real SQLite file (issue 43 §5): the value is typed on the platform, yet no byte of the data
// dir holds it, from the create on; save_routine names it as a secret param by its step, and the
// routine asks for it at each run.
let live: LiveService;
let client: Client;

beforeAll(async () => {
  live = await startLiveService();
  client = new Client({ name: "secret-fill", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${live.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${live.key}` } } }));
}, 60_000);
afterAll(async () => {
  await client?.close();
  await live?.close();
});

/** A tools/call through this file's client. */
const call = (name: string, args: Record<string, unknown>) => callTool(client, name, args);

/** Every byte of the data dir's database files (read by another process: see readRawFile). */
function storedBytes(): string {
  const dir = live.config.dataDir;
  return readdirSync(dir)
    .filter((file) => file.startsWith("action-service.db"))
    .map((file) => readRawFile(join(dir, file)).toString("latin1"))
    .join("");
}

async function postsBy(handle: string): Promise<string[]> {
  return ((await live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`)) as { text: string }[]).map((post) => post.text);
}

const steps = (value: string) => [
  { goto: "/" },
  { fill: { label: "What's on your mind?" }, value, secret: true },
  { click: { role: "button", name: "Post", exact: true } },
  { wait_for: { text: "Your post is live." } },
];

it("a fill marked secret is typed on the platform, yet is in no stored byte from the create on, nor in the action, its MCP result or the routine saved from it", async () => {
  const handle = await live.user("none");
  const accountId = await live.account(handle);
  const secret = `sealed${Date.now().toString(36)}words`;
  const created = await live.api("POST", "/v1/actions", { account_id: accountId, type: "browser_steps", params: { steps: steps(secret) } });
  expect(created.status).toBe(202);
  expect(JSON.stringify(created.json)).not.toContain(secret);
  expect(storedBytes()).not.toContain(secret);

  const done = await live.finished(created.json.id);
  expect(done.status).toBe("succeeded");
  expect(await postsBy(handle)).toEqual([secret]);
  expect(done.params.steps[1]).toEqual({ fill: { label: "What's on your mind?" }, value: "[secret]", secret: true });
  const viaMcp = await call("get_action", { action_id: done.id });
  expect(viaMcp.data.params.steps[1].value).toBe("[secret]");
  expect(viaMcp.text + JSON.stringify(viaMcp.data) + JSON.stringify(done)).not.toContain(secret);
  expect(storedBytes()).not.toContain(secret);

  // Its value was never kept: save_routine asks for it to be named by its step, then makes it a secret param.
  const unnamed = await call("save_routine", { platform: "sandbox", name: "secret_note", from_action_id: done.id });
  expect(unnamed.isError).toBe(true);
  expect(unnamed.text).toContain('Step 2 typed a secret (secret: true), whose value was never kept: name it as a secret param, e.g. {"password": {"step": 1, "secret": true}}');
  const saved = await call("save_routine", { platform: "sandbox", name: "secret_note", from_action_id: done.id, params: { note: { step: 1 } } });
  expect(saved.isError).toBe(false);
  expect(saved.data.steps[1]).toEqual({ fill: { label: "What's on your mind?" }, value: "{{note}}" });
  expect(saved.data.params.properties.note).toEqual({ type: "string", writeOnly: true });

  const other = await live.user("none");
  const otherAccount = await live.account(other);
  const otherSecret = `second${Date.now().toString(36)}words`;
  const replay = await live.run(otherAccount, "routine", { routine: "secret_note", params: { note: otherSecret } });
  expect(replay).toMatchObject({ status: "succeeded", params: { params: { note: "[secret]" } } });
  expect(await postsBy(other)).toEqual([otherSecret]);
  expect(storedBytes()).not.toContain(otherSecret);
});
