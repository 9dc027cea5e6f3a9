import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import { startSandbox, type RunningSandbox } from "../../src/sandbox/index.js";
import { openLiveView } from "../helpers/live-view.js";
import { CLI, restClient, startServe, type ServeProcess } from "../helpers/processes.js";

// Real processes on one data dir (DESIGN §11): `serve` children, a stdio `mcp` child, kill -9.
// The sandbox runs in this process and outlives every service process. Each test has its own data
// dir and processes, so the four run at once (most of each is waiting on a process or a page); the
// one that slows its platform down has a sandbox of its own.
let sandbox: RunningSandbox;
const dirs: string[] = [];
/** Each test's generous bound: four at once on a loaded machine, with a serve start-up or two each. */
const TEST_MS = 180_000;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
});
afterAll(async () => {
  await sandbox?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

let users = 0;
async function sandboxUser(challenge: string, on = sandbox): Promise<string> {
  const handle = `p${challenge.slice(0, 3)}${process.pid.toString(36)}${Date.now().toString(36)}${++users}`.slice(0, 30);
  const response = await fetch(`${on.url}/_sandbox/users`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ handle, name: `Proc ${handle}`, password: "sandbox-password", challenge }),
  });
  expect(response.status).toBe(201);
  return handle;
}

async function sandboxGet(path: string, on = sandbox): Promise<any> {
  return (await fetch(on.url + path)).json();
}

/** A test's serve on `dataDir`, killed (-9) when the test ends if it still runs. */
async function serve(test: TestContext, dataDir: string, on = sandbox): Promise<ServeProcess> {
  const started = await startServe({ dataDir, sandboxUrl: on.url, env: { ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "100000" } });
  test.onTestFinished(async () => {
    if (started.child.exitCode === null && started.child.signalCode === null) await started.crash();
  });
  return started;
}

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "action-service-proc-"));
  dirs.push(dir);
  return dir;
}

/** Polls until the action is in one of `statuses` (through whichever process `api` talks to). */
async function until(api: ReturnType<typeof restClient>, id: string, check: (action: any) => boolean, timeoutMs = 60_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { json } = await api("GET", `/v1/actions/${id}?wait=1`);
    if (check(json)) return json;
    if (Date.now() > deadline) throw new Error(`action ${id} is ${json?.status}: ${JSON.stringify(json)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function newest(handle: string): Promise<string> {
  return (await sandboxGet(`/_sandbox/outbox?to=${handle}`))[0].code;
}

describe.concurrent("processes sharing one data dir", () => {
  it("an answer posted to a second serve reaches the page held by the first, and a live view opened there streams it", { timeout: TEST_MS }, async (test) => {
    const dir = dataDir();
    const first = await serve(test, dir);
    const key = first.firstKey!;
    const viaFirst = restClient(() => first.url, key);
    const handle = await sandboxUser("email");
    const account = (await viaFirst("POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password" })).json.id;
    const created = (await viaFirst("POST", "/v1/actions?wait=30", { account_id: account, type: "connect", params: {} })).json;
    const paused = await until(viaFirst, created.id, (action) => action.status === "needs_input");
    // Started once the first holds the page (two runners on one data dir: either could have claimed it).
    const second = await serve(test, dir);
    const viaSecond = restClient(() => second.url, key);
    // Read through the second process, the link is the second's (the same token): its view is of the first's page.
    const seen = (await viaSecond("GET", `/v1/actions/${created.id}`)).json;
    expect(seen.challenge.sign_in_url).toBe(paused.challenge.sign_in_url.replace(first.url, second.url));
    const view = await openLiveView(seen.challenge.sign_in_url);
    try {
      expect(await view.next("state")).toMatchObject({ status: "needs_input", challenge: { kind: "email_code" } });
      expect(Buffer.from((await view.next("frame")).data, "base64").subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    } finally {
      view.close();
    }
    const answered = await viaSecond("POST", `/v1/actions/${created.id}/answer`, { answer: await newest(handle) });
    expect(answered.status).toBe(202);
    const done = await until(viaSecond, created.id, (action) => action.status !== "running" && action.status !== "needs_input");
    expect(done).toMatchObject({ status: "succeeded", result: { profile: { handle } } });
  });

  it("a stdio mcp started and stopped on serve's data dir leaves serve's waiting action alone, and serves its own links on a free port (their live views reach serve's pages)", { timeout: TEST_MS }, async (test) => {
    const dir = dataDir();
    const main = await serve(test, dir);
    const api = restClient(() => main.url, main.firstKey!);
    const handle = await sandboxUser("email");
    const account = (await api("POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password" })).json.id;
    const created = (await api("POST", "/v1/actions?wait=30", { account_id: account, type: "connect", params: {} })).json;
    const paused = await until(api, created.id, (action) => action.status === "needs_input");

    const client = new Client({ name: "desktop", version: "1.0.0" });
    test.onTestFinished(() => client.close());
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, "mcp"],
        // The example configuration's port: the one serve holds.
        env: { ...(process.env as Record<string, string>), ACTION_SERVICE_DATA_DIR: dir, ACTION_SERVICE_PORT: new URL(main.url).port, SANDBOX_URL: sandbox.url, ACTION_SERVICE_LOG_LEVEL: "error" },
        stderr: "pipe",
      }),
    );
    const seen = (await client.callTool({ name: "get_action", arguments: { action_id: created.id, wait_seconds: 0 } })) as unknown as { structuredContent: any };
    // Its link is on its own port (the same token), and its live view is of serve's page.
    const token = paused.challenge.sign_in_url.split("/live/")[1];
    expect(seen.structuredContent).toMatchObject({ status: "needs_input", challenge: { sign_in_url: expect.stringMatching(new RegExp(`/live/${token}$`)) } });
    expect(new URL(seen.structuredContent.challenge.sign_in_url).port).not.toBe(new URL(main.url).port);
    const view = await openLiveView(seen.structuredContent.challenge.sign_in_url);
    try {
      expect(Buffer.from((await view.next("frame")).data, "base64").subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    } finally {
      view.close();
    }
    const link = (await client.callTool({ name: "create_sign_in_link", arguments: { account_id: account } })) as unknown as { structuredContent: { url: string } };
    expect(new URL(link.structuredContent.url).port).not.toBe(new URL(main.url).port);
    const page = await fetch(link.structuredContent.url);
    expect(page.status).toBe(200);
    await page.body?.cancel();
    await client.close();

    // serve's action was not touched: still waiting on the same challenge, and its answer works.
    const after = (await api("GET", `/v1/actions/${created.id}`)).json;
    expect(after).toMatchObject({ status: "needs_input", challenge: { sign_in_url: paused.challenge.sign_in_url } });
    await api("POST", `/v1/actions/${created.id}/answer`, { answer: await newest(handle) });
    expect((await until(api, created.id, (action) => !["running", "needs_input"].includes(action.status))).status).toBe("succeeded");
  });
});

describe.concurrent("kill -9 of serve", () => {
  it("at needs_input: after the restart the action asks again with a fresh code, and posts exactly once", { timeout: TEST_MS }, async (test) => {
    const dir = dataDir();
    const first = await serve(test, dir);
    const key = first.firstKey!;
    let current = first;
    const api = restClient(() => current.url, key);
    const handle = await sandboxUser("email");
    const account = (await api("POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password" })).json.id;
    const text = `after a crash ${handle}`;
    const created = (await api("POST", "/v1/actions?wait=30", { account_id: account, type: "post", params: { text } })).json;
    const paused = await until(api, created.id, (action) => action.status === "needs_input");
    const firstCode = await newest(handle);
    await first.crash();

    current = await serve(test, dir);
    const again = await until(api, created.id, (action) => action.status === "needs_input" && action.challenge.sign_in_url !== paused.challenge.sign_in_url);
    expect(again.challenge.kind).toBe("email_code");
    const freshCode = await newest(handle);
    expect(freshCode).not.toBe(firstCode);
    await api("POST", `/v1/actions/${created.id}/answer`, { answer: freshCode });
    const done = await until(api, created.id, (action) => !["queued", "running", "needs_input"].includes(action.status));
    expect(done.status).toBe("succeeded");
    const posts = await sandboxGet(`/_sandbox/posts?author=${handle}`);
    expect(posts.filter((post: { text: string }) => post.text === text)).toHaveLength(1);
  });

  it("before the commit point the action runs again; after it, it fails browser_error — never posted twice", { timeout: TEST_MS }, async (test) => {
    // A slow platform of its own: every form answers late, which leaves time to kill mid-step.
    const slow = await startSandbox({ port: 0 });
    test.onTestFinished(() => slow.close());
    const setDelay = async (ms: number): Promise<void> => {
      const response = await fetch(`${slow.url}/_sandbox/settings`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ response_delay_ms: ms }) });
      expect(response.status).toBe(200);
    };
    const dir = dataDir();
    let current = await serve(test, dir, slow);
    const api = restClient(() => current.url, current.firstKey!);
    const db = new Database(join(dir, "action-service.db"), { readonly: true });
    test.onTestFinished(() => {
      db.close();
    });
    const committed = (id: string): string | null => db.prepare("SELECT committed_at FROM actions WHERE id = ?").pluck().get(id) as string | null;
    const handle = await sandboxUser("none", slow);
    const account = (await api("POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password" })).json.id;
    // Every form answers 2 s late.
    await setDelay(2_000);
    const before = `before the commit point ${handle}`;
    const first = (await api("POST", "/v1/actions", { account_id: account, type: "post", params: { text: before } })).json;
    await until(api, first.id, (action) => action.status === "running");
    // Signing in (a slow form) comes before the commit point.
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(committed(first.id)).toBeNull();
    await current.crash();
    // The run again need not be slow: what is checked is that it happens, and posts once.
    await setDelay(0);
    current = await serve(test, dir, slow);
    const rerun = await until(api, first.id, (action) => !["queued", "running", "needs_input"].includes(action.status));
    expect(rerun.status).toBe("succeeded");

    await setDelay(2_000);
    const after = `after the commit point ${handle}`;
    const second = (await api("POST", "/v1/actions", { account_id: account, type: "post", params: { text: after } })).json;
    const deadline = Date.now() + 60_000;
    while (!committed(second.id)) {
      if (Date.now() > deadline) throw new Error("never reached the commit point");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // Past the commit point: the post is being made; the platform answers late.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await current.crash();
    current = await serve(test, dir, slow);
    const failed = await until(api, second.id, (action) => !["queued", "running", "needs_input"].includes(action.status));
    expect(failed).toMatchObject({ status: "failed", error: { code: "browser_error" } });
    expect(failed.error.message).toContain("may already have done it");
    const texts = (await sandboxGet(`/_sandbox/posts?author=${handle}`, slow)).map((post: { text: string }) => post.text);
    expect(texts.filter((text: string) => text === before)).toHaveLength(1);
    expect(texts.filter((text: string) => text === after).length).toBeLessThanOrEqual(1);
  });
});
