import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { TOTP } from "otpauth";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { declaredDriver, loadPlatformFile } from "../../src/platforms/declared/index.js";
import { checkOnce } from "../helpers/checks.js";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { rows, sql } from "../helpers/sql.js";
import { eventually } from "../helpers/wait.js";

// The sandbox declared in a platform file (examples/drivers/sandbox.platform.json), run by the real
// service as any driver is: real Chromium against a real sandbox, REST and MCP, the inbox on. What
// a built-in driver gets, the declared one gets: challenges, the stored TOTP secret, the inbox,
// saved sessions, commit points, failure detectors and screenshots, health checks, pacing, events.
const PLATFORM = "sandbox-declared";
const FILE = join(import.meta.dirname, "..", "..", "examples", "drivers", "sandbox.platform.json");
const ALTERED = "sandbox-altered";
let live: LiveService;

beforeAll(async () => {
  const altered = JSON.parse(await readFile(FILE, "utf8"));
  altered.name = ALTERED;
  altered.actions.post.steps[1] = { click: { role: "button", name: "Publish", exact: true } };
  live = await startLiveService({ inbox: true, sandboxDrivers: [await loadPlatformFile(FILE), declaredDriver(altered, "altered copy of sandbox.platform.json")] });
}, 60_000);

afterAll(async () => {
  await live?.close();
});

const onPlatform = { platform: PLATFORM };

async function answer(actionId: string, code: string): Promise<any> {
  const response = await live.api("POST", `/v1/actions/${actionId}/answer`, { answer: code });
  expect(response.status).toBe(202);
  return live.wait(actionId);
}

async function connected(): Promise<{ handle: string; accountId: string }> {
  const handle = await live.user("none");
  const accountId = await live.account(handle, onPlatform);
  expect(await live.run(accountId, "connect")).toMatchObject({ status: "succeeded" });
  return { handle, accountId };
}

describe("the declared sandbox driver", () => {
  it("connect: a wrong password fails login_failed with the platform's words; the right one signs in, the profile read from the page", async () => {
    const handle = await live.user("none");
    const wrong = await live.account(handle, { ...onPlatform, password: "not-the-password" });
    const refused = await live.run(wrong, "connect");
    expect(refused).toMatchObject({ status: "failed", error: { code: "login_failed" } });
    expect(refused.error.message).toMatch(/^The platform refused the sign-in: .+/);
    expect(refused.error.message).not.toMatch(/not-the-password/);

    const other = await live.user("none");
    const right = await live.account(other, onPlatform);
    expect(await live.run(right, "connect")).toMatchObject({ status: "succeeded", result: { signed_in: true, profile: { handle: other } } });
  });

  it("a two-factor code answered through the API, and one the stored TOTP secret answers without pausing", async () => {
    const secret = "KRSXG5CTMVRXEZLUKN2XAZLSKNSWG4TF";
    const asked = await live.user("totp", { totp_secret: secret });
    const accountId = await live.account(asked, onPlatform);
    const paused = await live.run(accountId, "connect");
    expect(paused).toMatchObject({ status: "needs_input", challenge: { kind: "two_factor_code" } });
    expect(paused.challenge.message).toMatch(/authenticator app/);
    const code = new TOTP({ secret, digits: 6, period: 30 }).generate();
    expect(await answer(paused.id, code)).toMatchObject({ status: "succeeded", result: { profile: { handle: asked } } });

    const stored = await live.user("totp", { totp_secret: "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP" });
    const storedId = await live.account(stored, { ...onPlatform, totp_secret: "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP" });
    const done = await live.run(storedId, "connect");
    expect(done).toMatchObject({ status: "succeeded", answered_by: "totp" });
    expect(live.history(done.id).map((entry) => entry.status)).toEqual(["queued", "running", "succeeded"]);
  });

  it("an emailed code arrives in the account's inbox and is typed by itself, with the file's own code pattern", async () => {
    const { accountId } = await live.inboxUser("email", onPlatform);
    const done = await live.finished((await live.api("POST", "/v1/actions", { account_id: accountId, type: "connect", params: {} })).json.id);
    expect(done).toMatchObject({ status: "succeeded", answered_by: "inbox" });
  });

  it("a saved session is reused across a restart of the service: the next action meets no challenge", async () => {
    const handle = await live.user("email");
    const accountId = await live.account(handle, onPlatform);
    const paused = await live.run(accountId, "connect");
    expect(paused).toMatchObject({ status: "needs_input", challenge: { kind: "email_code" } });
    expect((await answer(paused.id, await live.latestCode(handle))).status).toBe("succeeded");
    await live.restart();
    const codesBefore = (await live.sandboxApi("GET", `/_sandbox/outbox?to=${handle}`)).length;
    const looked = await live.run(accountId, "lookup_person", { handle: "alice" });
    expect(looked).toMatchObject({ status: "succeeded" });
    expect(live.history(looked.id).map((entry) => entry.status)).not.toContain("needs_input");
    // No sign-in happened at all: the sandbox sent no new code.
    expect((await live.sandboxApi("GET", `/_sandbox/outbox?to=${handle}`)).length).toBe(codesBefore);
  });

  it("a post appears on the platform once, with the id the action returned; a lookup reads the person's page", async () => {
    const { handle, accountId } = await connected();
    const posted = await live.run(accountId, "post", { text: `Declared hello from ${handle}` });
    expect(posted).toMatchObject({ status: "succeeded", result: { post_id: expect.any(String), url: expect.stringContaining("/posts/") } });
    const posts = await live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`);
    expect(posts).toEqual([expect.objectContaining({ id: posted.result.post_id, text: `Declared hello from ${handle}` })]);
    // The commit point was passed before the click that posted.
    const committed = await rows<{ committed_at: string | null }>(live.server.service.store, sql`SELECT committed_at FROM actions WHERE id = ${posted.id}`);
    expect(committed[0]!.committed_at).toEqual(expect.any(String));

    const person = await live.run(accountId, "lookup_person", { handle: "alice" });
    expect(person).toMatchObject({ status: "succeeded", result: { handle: "alice", name: "Alice Johnson", headline: "Product designer at Northwind · sketching in the margins" } });
    const byUrl = await live.run(accountId, "lookup_person", { url: `${live.sandbox.url}/people/bob` });
    expect(byUrl).toMatchObject({ status: "succeeded", result: { handle: "bob", name: "Bob Martinez" } });
    const elsewhere = await live.run(accountId, "lookup_person", { url: "https://example.com/people/bob" });
    expect(elsewhere).toMatchObject({ status: "failed", error: { code: "invalid_input" } });
  });

  it("send_message and lookup_conversation: the message sent is the one read back", async () => {
    const { handle, accountId } = await connected();
    const sent = await live.run(accountId, "send_message", { to: "alice", text: `Hi Alice, from ${handle}` });
    expect(sent).toMatchObject({ status: "succeeded", result: { conversation_id: expect.any(String), message_id: expect.any(String) } });
    const read = await live.run(accountId, "lookup_conversation", { with: "alice" });
    expect(read).toMatchObject({ status: "succeeded", result: { conversation_id: sent.result.conversation_id } });
    expect(read.result.messages.at(-1)).toMatchObject({ from: handle, text: `Hi Alice, from ${handle}`, sent_at: expect.stringMatching(/^\d{4}-/) });
    const none = await live.run(accountId, "lookup_conversation", { with: "bob" });
    expect(none).toMatchObject({ status: "failed", error: { code: "not_found" } });
  });

  it("a failure detector: the sandbox's \"Slow down\" fails the action rate_limited with the file's message", async () => {
    const { handle, accountId } = await connected();
    await live.sandboxApi("POST", "/_sandbox/settings", { rate_limit: { max: 1, window_seconds: 600 } });
    try {
      // A person's page counts once: the post is one too many.
      expect(await live.run(accountId, "lookup_person", { handle: "alice" })).toMatchObject({ status: "succeeded" });
      const action = await live.run(accountId, "post", { text: `Too fast ${handle}` });
      expect(action).toMatchObject({ status: "failed", error: { code: "rate_limited", message: expect.stringContaining("slow down") } });
      expect(await live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`)).toEqual([]);
    } finally {
      await live.sandboxApi("POST", "/_sandbox/settings", { rate_limit: { max: 1000, window_seconds: 60 } });
    }
  });

  it("a step the page cannot do fails ui_changed naming the step, past the commit point, and its screenshot is kept", async () => {
    // The same file with a button the sandbox does not have: its post cannot click "Publish".
    const handle = await live.user("none");
    const accountId = await live.account(handle, { platform: ALTERED });
    const action = await live.run(accountId, "post", { text: `Never published ${handle}` });
    expect(action).toMatchObject({ status: "failed", error: { code: "ui_changed", message: "Step 2 (click) could not be done on /feed." } });
    const [row] = await rows<{ committed_at: string | null }>(live.server.service.store, sql`SELECT committed_at FROM actions WHERE id = ${action.id}`);
    expect(row!.committed_at).toEqual(expect.any(String));
    const kept = await rows<{ n: number }>(live.server.service.store, sql`SELECT COUNT(*) AS n FROM failure_screenshots WHERE action_id = ${action.id}`);
    expect(Number(kept[0]!.n)).toBe(1);
  });

  it("a health check on demand finds the account connected", async () => {
    const { accountId } = await connected();
    const seen = await checkOnce(live, accountId);
    expect(seen.account).toMatchObject({ status: "connected" });
  });

  it("pacing: the file's paces are the account's defaults, and an override holds the next post back", async () => {
    const { handle, accountId } = await connected();
    const account = (await live.api("GET", `/v1/accounts/${accountId}`)).json;
    expect(account.pace).toMatchObject({ post: { per_hour: 600 } });
    expect((await live.api("PATCH", `/v1/accounts/${accountId}`, { pace: { post: { min_gap_seconds: 3600 } } })).status).toBe(200);
    expect(await live.run(accountId, "post", { text: `First ${handle}` })).toMatchObject({ status: "succeeded" });
    const next = (await live.api("POST", "/v1/actions", { account_id: accountId, type: "post", params: { text: `Second ${handle}` } })).json;
    const held = await eventually(async () => {
      const current = (await live.api("GET", `/v1/actions/${next.id}`)).json;
      return current.not_before ? current : undefined;
    });
    expect(held.status).toBe("queued");
    expect((await live.api("POST", `/v1/actions/${next.id}/cancel`)).json.status).toBe("canceled");
  });

  it("events: an action on the declared platform is announced as any other", async () => {
    const { handle, accountId } = await connected();
    const posted = await live.run(accountId, "post", { text: `Evented ${handle}` });
    const { store } = live.server.service;
    const workspaceId = (await store.accounts.get(accountId))!.workspace_id;
    const statuses = await eventually(async () => {
      const mine = (await store.events.list(workspaceId, 10_000)).filter((event) => event.type === "action.updated" && event.subject_id === posted.id);
      const seen = mine.map((event) => (event.data as { status?: string }).status);
      return seen.includes("succeeded") ? seen : undefined;
    });
    expect(statuses).toContain("running");
  });

  it("MCP: list_platforms shows the declared platform with its action types and params", async () => {
    const client = new Client({ name: "declared-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${live.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${live.key}` } } }));
    try {
      const listed = await client.callTool({ name: "list_platforms", arguments: {} });
      const platforms = (listed.structuredContent as { data: { name: string; actions: { type: string }[] }[] }).data;
      const declared = platforms.find((platform) => platform.name === PLATFORM);
      expect(declared?.actions.map((action) => action.type).sort()).toEqual(["browser_steps", "connect", "lookup_conversation", "lookup_person", "post", "send_message"]);
    } finally {
      await client.close();
    }
  });
});
