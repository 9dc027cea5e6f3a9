import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { rows, sql } from "../helpers/sql.js";
import { call as callTool } from "./support.js";

// Routines end to end: the real service, the real sandbox, real Chromium, an agent through the MCP SDK's own client.
let live: LiveService;
let client: Client;

beforeAll(async () => {
  live = await startLiveService();
  client = new Client({ name: "routine-teacher", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${live.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${live.key}` } } }));
});
afterAll(async () => {
  await client?.close();
  await live?.close();
});

/** A tools/call through this file's client. */
const call = (name: string, args: Record<string, unknown>) => callTool(client, name, args);

async function postsBy(handle: string): Promise<string[]> {
  return ((await live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`)) as { text: string }[]).map((post) => post.text);
}

/** Every byte the service keeps in its data dir (the database and its write-ahead log): what "never stored" is checked against. */
function storedBytes(): string {
  const dir = live.config.dataDir;
  return readdirSync(dir)
    .filter((file) => file.startsWith("action-service.db"))
    .map((file) => readFileSync(join(dir, file)).toString("latin1"))
    .join("");
}

describe("routines through MCP against the sandbox", () => {
  let teacher: string;
  let learner: string;
  let learnerAccount: string;
  let taught: string;

  it("save_routine takes a succeeded browser_steps action's steps, naming a typed value as a param; it runs for another account with other params", async () => {
    teacher = await live.user("none");
    learner = await live.user("none");
    const teacherAccount = await live.account(teacher);
    learnerAccount = await live.account(learner);
    const typed = `Taught once ${Date.now()}`;
    const steps = await call("run_action", {
      account_id: teacherAccount,
      type: "browser_steps",
      params: {
        steps: [
          { goto: `${live.sandbox.url}/` },
          { fill: `role=textbox[name="What's on your mind?"]`, value: typed },
          { click: 'role=button[name="Post" s]' },
          { wait_for: "text=Your post is live." },
          { extract_text: "role=status", as: "status" },
        ],
      },
      wait_seconds: 45,
    });
    expect(steps.data.status).toBe("succeeded");
    taught = steps.data.id;

    const saved = await call("save_routine", { platform: "sandbox", name: "post_note", from_action_id: taught, params: { text: typed }, description: "Posts a note." });
    expect(saved.isError).toBe(false);
    expect(saved.data).toMatchObject({ name: "post_note", version: 1, from_action_id: taught, extracts: ["status"] });
    // Named as the run found the element (its role and accessible name, exactly), not as the selector was written.
    expect(saved.data.steps[1]).toEqual({ fill: { role: "textbox", name: "What's on your mind?", exact: true }, value: "{{text}}" });
    expect(saved.data.steps[0]).toEqual({ goto: "/" });
    expect(JSON.stringify(saved.data.steps)).not.toContain(typed);

    const other = `Replayed without the agent ${Date.now()}`;
    const replay = await call("run_action", { account_id: learnerAccount, type: "routine", params: { routine: "post_note", params: { text: other } }, wait_seconds: 45 });
    expect(replay.data.status).toBe("succeeded");
    expect(replay.data.result).toEqual({ extracted: { status: "Your post is live." }, version: 1 });
    expect(replay.data.params).toEqual({ routine: "post_note", params: { text: other }, version: 1 });
    expect(await postsBy(learner)).toContain(other);
  });

  it("refuses to save from an action that is not a succeeded browser_steps, or a value the steps never typed, saying so", async () => {
    const missing = await call("save_routine", { platform: "sandbox", name: "post_note", from_action_id: taught, params: { text: "never typed" } });
    expect(missing.isError).toBe(true);
    expect(missing.text).toContain("was not typed or opened in any step");
    const cssOnly = await call("run_action", {
      account_id: learnerAccount,
      type: "browser_steps",
      // A CSS target whose element has no accessible name: nothing a routine could name it by.
      params: { steps: [{ goto: `${live.sandbox.url}/` }, { wait_for: "main" }] },
      wait_seconds: 45,
    });
    expect(cssOnly.data.status).toBe("succeeded");
    const refused = await call("save_routine", { platform: "sandbox", name: "css_only", from_action_id: cssOnly.data.id });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain('selector "main" and no role and accessible name was recorded for it');
  });

  it("a secret param is typed at run time and is never in the stored action, its events, the routine or anything in the data dir", async () => {
    const created = await live.api("POST", "/v1/routines", {
      platform: "sandbox",
      name: "signed_note",
      params: { type: "object", properties: { text: { type: "string" }, signature: { type: "string", writeOnly: true } }, required: ["text", "signature"] },
      steps: [
        { goto: "/" },
        { fill: { label: "What's on your mind?" }, value: "{{text}} {{signature}}" },
        { click: { role: "button", name: "Post", exact: true } },
        { wait_for: { text: "Your post is live." } },
      ],
    });
    expect(created.status).toBe(201);
    const secret = `sig${Date.now().toString(36)}zz`;
    const text = `Signed ${Date.now()}`;
    const run = await call("run_action", { account_id: learnerAccount, type: "routine", params: { routine: "signed_note", params: { text, signature: secret } }, wait_seconds: 45 });
    expect(run.data.status).toBe("succeeded");
    expect(await postsBy(learner)).toContain(`${text} ${secret}`);
    expect(run.data.params.params).toEqual({ text, signature: "[secret]" });
    expect(run.text).not.toContain(secret);
    expect(JSON.stringify((await live.api("GET", `/v1/actions/${run.data.id}`)).json)).not.toContain(secret);
    expect(JSON.stringify((await live.api("GET", "/v1/routines/signed_note")).json)).not.toContain(secret);
    expect(storedBytes()).not.toContain(secret);
    expect(storedBytes()).toContain(text);
  });

  it("list_platforms shows each platform's routines beside its action types; list_routines lists them; delete_routine removes one", async () => {
    const platforms = await call("list_platforms", {});
    const sandbox = platforms.data.data.find((platform: { name: string }) => platform.name === "sandbox");
    expect(sandbox.routines.map((routine: { name: string }) => routine.name).sort()).toEqual(["post_note", "signed_note"]);
    expect(platforms.text).toContain('routine "post_note" (v1) params {text}');

    const listed = await call("list_routines", { platform: "sandbox" });
    expect(listed.data.data).toHaveLength(2);
    expect(listed.text).toContain("post_note (v1, sandbox) params {text} → extracted {status}");

    const deleted = await call("delete_routine", { name: "signed_note" });
    expect(deleted.data).toEqual({ deleted: true, name: "signed_note" });
    const after = await call("list_routines", {});
    expect(after.text).not.toContain("error");
    expect(after.data.data.map((routine: { name: string }) => routine.name)).toEqual(["post_note"]);
    const gone = await call("run_action", { account_id: learnerAccount, type: "routine", params: { routine: "signed_note", params: { text: "x", signature: "y" } } });
    expect(gone.isError).toBe(true);
  });
  it("a replay whose acting step's target now matches several elements fails ui_changed with the count and a snapshot, instead of acting on the first", async () => {
    const created = await live.api("POST", "/v1/routines", {
      platform: "sandbox",
      name: "open_a_link",
      params: { type: "object", properties: {} },
      // Saved by hand through REST (save_routine would refuse it: its target matched several elements when it ran).
      steps: [{ goto: "/feed" }, { click: { role: "link" } }],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const replay = await call("run_action", { account_id: learnerAccount, type: "routine", params: { routine: "open_a_link", params: {} }, wait_seconds: 45 });
    expect(replay.data).toMatchObject({ status: "failed", error: { code: "ui_changed", details: { step: 1, path: "/feed" } } });
    expect(replay.data.error.message).toMatch(/^Step 2's target now matches \d+ elements on the page; a routine acts only on the one it was saved for/);
    expect(replay.data.error.details.snapshot).toContain("- link");
    // Found out before the commit point: nothing was clicked.
    const [row] = await rows<{ committed_at: string | null }>(live.server.service.store, sql`SELECT committed_at FROM actions WHERE id = ${replay.data.id}`);
    expect(row!.committed_at).toBeNull();
    await call("delete_routine", { name: "open_a_link" });
  });
});
