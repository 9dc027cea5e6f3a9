import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Harness } from "../helpers/harness.js";
import { WebClient, postForms, webHarness } from "./support.js";
import { readRawFile } from "../helpers/raw-file.js";

let h: Harness;
let web: WebClient;
beforeEach(async () => {
  h = await webHarness();
  web = new WebClient(h.app);
});
afterEach(async () => {
  await h.destroy();
});

const HOUR = 60 * 60 * 1000;

describe("signing in", () => {
  it("exchanges the key for an HttpOnly, SameSite=Strict session cookie that holds no part of the key", async () => {
    const signedIn = await web.signIn(h.adminKey);
    expect(signedIn.status).toBe(303);
    expect(signedIn.location).toBe("/app/actions");
    const setCookie = signedIn.headers.get("set-cookie")!;
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\/app/);
    const token = web.cookie!.split("=")[1]!;
    expect(token).not.toContain(h.adminKey.slice(3, 13));
    expect(h.adminKey).not.toContain(token.slice(0, 10));
    const page = await web.send("GET", "/app/actions");
    expect(page.status).toBe(200);
    expect(page.text).toContain("<h1>Actions</h1>");
    expect(page.text).not.toContain(h.adminKey);
    // Only a hash of the session token is stored.
    const file = new Database(h.dbFile, { readonly: true });
    const stored = file.prepare("SELECT token_hash FROM web_sessions").pluck().all() as string[];
    file.close();
    expect(stored).toHaveLength(1);
    expect(stored[0]).not.toBe(token);
    expect(readRawFile(h.dbFile).includes(token)).toBe(false);
  });

  it("a wrong or revoked key signs nobody in", async () => {
    const wrong = await web.signIn("as_not-a-key");
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("set-cookie")).toBeNull();
    expect(wrong.text).toContain("That API key is not valid");
    const issued = await h.engine.keys.issue({ role: "operator" });
    await h.engine.keys.revoke(issued.id);
    expect((await web.signIn(issued.key)).status).toBe(401);
  });

  it("goes back to the page that asked for it, never to another site", async () => {
    const asked = await web.send("GET", "/app/credits");
    expect(asked.status).toBe(303);
    expect(asked.location).toBe("/app/sign-in?next=%2Fapp%2Fcredits");
    for (const next of ["https://evil.example/", "//evil.example/app", "/v1/credits", "/app/../v1"]) {
      const signedIn = await web.send("POST", "/app/sign-in", { form: { key: h.adminKey, next } });
      expect(signedIn.location, next).toBe("/app/actions");
    }
    expect((await web.send("POST", "/app/sign-in", { form: { key: h.adminKey, next: "/app/credits" } })).location).toBe("/app/credits");
  });
});

describe("a session ends", () => {
  it("after an hour unused, and each use moves that hour on", async () => {
    await web.signIn(h.adminKey);
    h.clock.advance(50 * 60 * 1000);
    expect((await web.send("GET", "/app/actions")).status).toBe(200);
    h.clock.advance(50 * 60 * 1000);
    expect((await web.send("GET", "/app/actions")).status).toBe(200);
    h.clock.advance(HOUR + 1000);
    const ended = await web.send("GET", "/app/actions");
    expect(ended.status).toBe(303);
    expect(ended.location).toContain("ended=1");
  });

  it("12 hours after signing in, however much it is used", async () => {
    await web.signIn(h.adminKey);
    // Used every 59 minutes: never idle for an hour, 11 h 48 min in after twelve uses…
    for (let use = 1; use <= 12; use += 1) {
      h.clock.advance(HOUR - 60_000);
      expect((await web.send("GET", "/app/actions")).status, `use ${use}`).toBe(200);
    }
    // …and past 12 hours at the thirteenth.
    h.clock.advance(HOUR - 60_000);
    expect((await web.send("GET", "/app/actions")).status).toBe(303);
  });

  it("when its key is revoked", async () => {
    const issued = await h.engine.keys.issue({ role: "operator" });
    await web.signIn(issued.key);
    expect((await web.send("GET", "/app/actions")).status).toBe(200);
    await h.engine.keys.revoke(issued.id);
    expect((await web.send("GET", "/app/actions")).status).toBe(303);
  });

  it("on sign-out, on the server: the old cookie no longer works", async () => {
    await web.signIn(h.adminKey);
    const cookie = web.cookie;
    const csrf = await web.csrf();
    const out = await web.send("POST", "/app/sign-out", { form: { _csrf: csrf } });
    expect(out.status).toBe(303);
    expect(out.location).toBe("/app/sign-in?signed_out=1");
    expect(out.headers.get("set-cookie")).toMatch(/Max-Age=0/);
    web.cookie = cookie;
    expect((await web.send("GET", "/app/actions")).status).toBe(303);
  });
});

describe("changes come only from the app's own forms", () => {
  it("without the form token, with another session's token, or from another origin: 403 and nothing changes", async () => {
    await web.signIn(h.adminKey);
    const other = new WebClient(h.app);
    await other.signIn(h.adminKey);
    const account = { platform: "sandbox", username: "mallory-target", password: "pw" };
    const refusals = [
      await web.send("POST", "/app/accounts", { form: account }),
      await web.send("POST", "/app/accounts", { form: { ...account, _csrf: await other.csrf() } }),
      await web.send("POST", "/app/accounts", { form: { ...account, _csrf: await web.csrf() }, origin: "http://evil.example" }),
      await web.send("POST", "/app/accounts", { form: { ...account, _csrf: await web.csrf() }, origin: "http://127.0.0.1:9999" }),
      await web.send("POST", "/app/accounts", { form: { ...account, _csrf: await web.csrf() }, origin: "null" }),
      await web.send("POST", "/app/credits/top-ups", { json: { credits: 5 } }),
    ];
    expect(refusals.map((response) => response.status)).toEqual([403, 403, 403, 403, 403, 403]);
    expect(await h.engine.accounts.list((await h.engine.keys.authenticate(h.adminKey))!)).toHaveLength(0);
    const made = await web.send("POST", "/app/accounts", { form: { ...account, _csrf: await web.csrf() } });
    expect(made.status).toBe(303);
    expect((await h.engine.accounts.list((await h.engine.keys.authenticate(h.adminKey))!)).map((created) => created.username)).toEqual(["mallory-target"]);
  });
});

describe("each role sees what it may do", () => {
  async function formsSeenBy(key: string, accountId: string, actionId: string): Promise<Record<string, string[] | number>> {
    const client = new WebClient(h.app);
    await client.signIn(key);
    const seen: Record<string, string[] | number> = {};
    for (const path of ["/app/actions", "/app/actions/new", `/app/actions/${actionId}`, "/app/accounts", `/app/accounts/${accountId}`, "/app/credits", "/app/keys", "/app/webhooks", "/app/feedback"]) {
      const page = await client.send("GET", path);
      seen[path] = page.status === 200 ? postForms(page.text) : page.status;
    }
    return seen;
  }

  it("read_only sees every page and no form that changes anything; operator runs; admin manages", async () => {
    const admin = (await h.engine.keys.authenticate(h.adminKey))!;
    const account = await h.engine.accounts.create(admin, { platform: "sandbox", username: "alice", password: "pw" });
    const action = await h.engine.createAction(admin, { account_id: account.id, type: "post", params: { text: "hi" } });
    await h.engine.waitFor(action.id, 5);
    const failed = (await h.engine.getAction(admin, action.id)).status;
    const retry = failed === "failed" ? ["/app/actions"] : [];

    expect(await formsSeenBy(await h.key("read_only"), account.id, action.id)).toEqual({
      "/app/actions": [],
      "/app/actions/new": [],
      [`/app/actions/${action.id}`]: [],
      "/app/accounts": [],
      [`/app/accounts/${account.id}`]: [],
      "/app/credits": [],
      "/app/keys": 403,
      "/app/webhooks": 403,
      "/app/feedback": 403,
    });
    expect(await formsSeenBy(await h.key("operator"), account.id, action.id)).toEqual({
      "/app/actions": [],
      "/app/actions/new": ["/app/actions"],
      [`/app/actions/${action.id}`]: retry,
      "/app/accounts": [],
      [`/app/accounts/${account.id}`]: [`/app/accounts/${account.id}/connect`, `/app/accounts/${account.id}/sign-in-links`],
      "/app/credits": [],
      "/app/keys": 403,
      "/app/webhooks": 403,
      "/app/feedback": 403,
    });
    const adminForms = await formsSeenBy(h.adminKey, account.id, action.id);
    expect(adminForms["/app/accounts"]).toEqual(["/app/accounts"]);
    expect(adminForms[`/app/accounts/${account.id}`]).toEqual([
      `/app/accounts/${account.id}/connect`,
      `/app/accounts/${account.id}/sign-in-links`,
      `/app/accounts/${account.id}/pace`,
      `/app/accounts/${account.id}/inbox/rotate`,
      `/app/accounts/${account.id}`,
      `/app/accounts/${account.id}/delete`,
    ]);
    expect(adminForms["/app/keys"]).toEqual(expect.arrayContaining(["/app/keys"]));
    expect(adminForms["/app/webhooks"]).toEqual(["/app/webhooks"]);
    expect(adminForms["/app/feedback"]).toEqual([]);
  });

  it("a forged POST from a key without the permission is refused and changes nothing", async () => {
    const reader = new WebClient(h.app);
    await reader.signIn(await h.key("read_only"));
    const csrf = await reader.csrf();
    const attempts = [
      await reader.send("POST", "/app/accounts", { form: { _csrf: csrf, platform: "sandbox", username: "x", password: "pw" } }),
      await reader.send("POST", "/app/keys", { form: { _csrf: csrf, role: "admin" } }),
      await reader.send("POST", "/app/credits/top-ups", { json: { credits: 5 }, headers: { "x-csrf-token": csrf } }),
    ];
    expect(attempts.map((response) => response.status)).toEqual([403, 403, 403]);
    expect(attempts[0]!.text).toContain("may not create, change or delete accounts");
    expect(await h.store.workspaces.listKeys()).toHaveLength(2);
    expect(await h.engine.accounts.list((await h.engine.keys.authenticate(h.adminKey))!)).toHaveLength(0);
  });

  it("an admin key limited to some accounts does not manage keys (it could lift its own limit)", async () => {
    const admin = (await h.engine.keys.authenticate(h.adminKey))!;
    const account = await h.engine.accounts.create(admin, { platform: "sandbox", username: "alice", password: "pw" });
    const limited = new WebClient(h.app);
    await limited.signIn(await h.key("admin", { accountIds: [account.id] }));
    expect((await limited.send("GET", "/app/keys")).status).toBe(403);
    expect((await limited.send("POST", "/app/keys", { form: { _csrf: await limited.csrf(), role: "admin" } })).status).toBe(403);
    expect((await limited.send("GET", "/app/actions")).text).not.toContain('href="/app/keys"');
  });
});

describe("API keys page", () => {
  it("shows a new key once, lists it without its secret, and revoking it refuses it on REST too", async () => {
    await web.signIn(h.adminKey);
    const created = await web.send("POST", "/app/keys", { form: { _csrf: await web.csrf(), role: "read_only" } });
    expect(created.status).toBe(201);
    const key = /id="issued-key" class="secret" readonly value="(as_[^"]+)"/.exec(created.text)![1]!;
    expect((await h.request("GET", "/v1/credits", { key })).status).toBe(200);
    const listed = await web.send("GET", "/app/keys");
    expect(listed.text).not.toContain(key);
    expect(listed.text).toContain(`${key.slice(0, 10)}…`);
    const id = (await h.engine.keys.authenticate(key))!.keyId!;
    const revoked = await web.send("POST", `/app/keys/${id}/revoke`, { form: { _csrf: await web.csrf() } });
    expect(revoked.status).toBe(303);
    expect((await h.request("GET", "/v1/credits", { key })).status).toBe(401);
  });

  it("another workspace's key is not found, and stays valid", async () => {
    const elsewhere = await h.key("admin", { workspace: "other" });
    const id = (await h.engine.keys.authenticate(elsewhere))!.keyId!;
    await web.signIn(h.adminKey);
    expect((await web.send("POST", `/app/keys/${id}/revoke`, { form: { _csrf: await web.csrf() } })).status).toBe(404);
    expect((await h.request("GET", "/v1/credits", { key: elsewhere })).status).toBe(200);
  });
});

describe("the run form", () => {
  it("is built from the action reference, and a refused param is named at its field with nothing created", async () => {
    const admin = (await h.engine.keys.authenticate(h.adminKey))!;
    const account = await h.engine.accounts.create(admin, { platform: "sandbox", username: "alice", password: "pw" });
    await web.signIn(h.adminKey);
    const form = await web.send("GET", `/app/actions/new?account_id=${account.id}&type=lookup_person`);
    expect(form.text).toContain('name="p.handle"');
    expect(form.text).toContain('name="p.url"');
    expect(form.text).toContain("Give one of these: Handle, or URL.");
    const post = await web.send("GET", `/app/actions/new?account_id=${account.id}&type=post`);
    expect(post.text).toMatch(/<textarea id="param-text" name="p.text" required/);
    const refused = await web.send("POST", "/app/actions", { form: { _csrf: await web.csrf(), account_id: account.id, type: "post", "p.text": "" } });
    expect(refused.status).toBe(422);
    expect(refused.text).toMatch(/id="param-text-error">[^<]+</);
    expect((await h.engine.listActions(admin, { limit: 10 })).data).toHaveLength(0);
    const run = await web.send("POST", "/app/actions", { form: { _csrf: await web.csrf(), account_id: account.id, type: "post", "p.text": "Hello" } });
    expect(run.status).toBe(303);
    const [action] = (await h.engine.listActions(admin, { limit: 10 })).data;
    expect(run.location).toBe(`/app/actions/${action!.id}`);
    expect(action!.params).toEqual({ text: "Hello" });
  });
});

it("an unknown page inside the app is an HTML 404", async () => {
  await web.signIn(h.adminKey);
  const missing = await web.send("GET", "/app/nothing-here");
  expect(missing.status).toBe(404);
  expect(missing.text).toContain("<h1>Not found</h1>");
});

it("a page follows the session's event stream from the event it was rendered after", async () => {
  await web.signIn(h.adminKey);
  const admin = (await h.engine.keys.authenticate(h.adminKey))!;
  await h.engine.accounts.create(admin, { platform: "sandbox", username: "alice", password: "pw" });
  const list = await web.send("GET", "/app/accounts");
  const after = /data-watch="account.updated:\*" data-after="(evt_[^"]+)"/.exec(list.text)![1]!;
  const controller = new AbortController();
  const response = await h.app.request(`http://127.0.0.1:8787/app/events?after=${after}`, { headers: { host: "127.0.0.1:8787", cookie: web.cookie! }, signal: controller.signal });
  expect(response.headers.get("content-type")).toContain("text/event-stream");
  await h.engine.accounts.create(admin, { platform: "sandbox", username: "bob", password: "pw" });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("bob")) text += (await reader.read()).value ?? "";
  expect(text).toContain("event: account.updated");
  expect(text).not.toContain('"username":"alice"');
  controller.abort();
  await reader.cancel().catch(() => undefined);
});

it("a sign-in link made on an account's page is shown once, as a link to the live browser", async () => {
  const admin = (await h.engine.keys.authenticate(h.adminKey))!;
  const account = await h.engine.accounts.create(admin, { platform: "sandbox", username: "owner" });
  await web.signIn(h.adminKey);
  const made = await web.send("POST", `/app/accounts/${account.id}/sign-in-links`, { form: { _csrf: await web.csrf() } });
  expect(made.status).toBe(200);
  const url = /id="link-url" readonly value="([^"]+)"/.exec(made.text)![1]!;
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:8787\/live\/[A-Za-z0-9_-]{43}$/);
  expect(made.text).toContain(`href="${url}" target="_blank"`);
  expect(await h.engine.live.resolve(url.split("/").pop()!)).toMatchObject({ kind: "sign_in" });
  expect((await web.send("GET", `/app/accounts/${account.id}`)).text).not.toContain(url);
});

it("the web app draws on the key's rate limit like every surface: 429 with Retry-After", async () => {
  await h.destroy();
  h = await webHarness({ perMinute: 3 });
  web = new WebClient(h.app);
  await web.signIn(h.adminKey);
  const statuses = [];
  for (let i = 0; i < 4; i += 1) statuses.push((await web.send("GET", "/app/credits")).status);
  expect(statuses).toEqual([200, 200, 200, 429]);
  const refused = await web.send("GET", "/app/credits");
  expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(refused.text).toContain("Too many requests");
});

it("webhooks and feedback pages: a private URL is refused, a public one shows its secret once; feedback sent from a page is listed for admins", async () => {
  await web.signIn(h.adminKey);
  const refused = await web.send("POST", "/app/webhooks", { form: { _csrf: await web.csrf(), url: "http://127.0.0.1:9/hook" } });
  expect(refused.status).toBe(422);
  expect(refused.text).toContain("ACTION_SERVICE_WEBHOOK_ALLOW_PRIVATE=true");
  const created = await web.send("POST", "/app/webhooks", { form: { _csrf: await web.csrf(), url: "http://93.184.216.34/hook", events: "action.updated" } });
  expect(created.status).toBe(201);
  const secret = /id="webhook-secret" class="secret" readonly value="(whsec_[^"]+)"/.exec(created.text)![1]!;
  const listed = await web.send("GET", "/app/webhooks");
  expect(listed.text).toContain("http://93.184.216.34/hook");
  expect(listed.text).not.toContain(secret);
  expect(await h.engine.webhooks.list((await h.engine.keys.authenticate(h.adminKey))!)).toMatchObject([{ url: "http://93.184.216.34/hook", events: ["action.updated"] }]);

  const sent = await web.send("POST", "/app/feedback", { form: { _csrf: await web.csrf(), message: "The feed is slow to load." } });
  expect(sent.status).toBe(303);
  expect((await web.send("GET", "/app/feedback")).text).toContain("The feed is slow to load.");
});
