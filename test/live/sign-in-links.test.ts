import { chromium, type Browser, type Page } from "playwright";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { CHROMIUM_ARGS, findChromium } from "../../src/browser/executable.js";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { eventually } from "../helpers/scripted-executor.js";

let live: LiveService;
let person: Browser;

beforeAll(async () => {
  live = await startLiveService({ server: { live: { unwatchedMs: 500, maxPagesPerKey: 2 } }, env: { ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "60" } });
  person = await chromium.launch({ executablePath: findChromium(process.env.BROWSER_EXECUTABLE_PATH)?.path, args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await person?.close();
  await live?.close();
});

async function signInLink(accountId: string, key?: string): Promise<string> {
  const link = await live.api("POST", `/v1/accounts/${accountId}/sign-in-links`, undefined, key ? { key } : {});
  expect(link.status).toBe(201);
  return link.json.url;
}

async function view(url: string): Promise<Page> {
  const page = await (await person.newContext()).newPage();
  await page.goto(url);
  return page;
}

/** The account's own sign-in page, as the service opened it. */
function accountPages(accountId: string): Page[] {
  return live.server.pool.contextOf(accountId)?.pages() ?? [];
}

async function signInOnPage(page: Page, handle: string): Promise<void> {
  await page.getByLabel("Username").fill(handle);
  await page.getByLabel("Password").fill("sandbox-password");
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

describe("owner sign-in links", () => {
  it("close their page once the last viewer has been gone a short while, and free the account", async () => {
    const handle = await live.user("none");
    const account = (await live.api("POST", "/v1/accounts", { platform: "sandbox", username: handle })).json.id;
    const viewer = await view(await signInLink(account));
    await viewer.locator("#screen").waitFor({ state: "visible" });
    expect(live.server.hub.signInPages).toBe(1);
    expect(accountPages(account)).toHaveLength(1);
    // While the page is open no action starts on the account (one writer per context).
    const queued = await live.api("POST", "/v1/actions?wait=1", { account_id: account, type: "lookup_person", params: { handle: "alice" } });
    expect(queued.json.status).toBe("queued");
    await viewer.context().close();
    await live.until(() => live.server.hub.signInPages === 0, 5_000);
    // The account is free again: the queued action runs (and fails signed_out: no password, no session),
    // and once it has ended no page of the account is left open.
    expect((await live.finished(queued.json.id)).error?.code).toBe("signed_out");
    await live.until(() => accountPages(account).length === 0, 5_000);
  });

  it("keep one page per account and a bounded number per key: a newer link replaces the older page", async () => {
    const key = (await live.api("POST", "/v1/accounts", { platform: "sandbox", username: await live.user("none") })).json.id as string;
    const operator = (await live.server.service.engine.keys.issue({ role: "operator" })).key;
    const first = await view(await signInLink(key, operator));
    await first.locator("#screen").waitFor({ state: "visible" });
    const second = await view(await signInLink(key, operator));
    await second.locator("#screen").waitFor({ state: "visible" });
    expect(accountPages(key)).toHaveLength(1);
    const others = [];
    for (let i = 0; i < 2; i++) {
      const account = (await live.api("POST", "/v1/accounts", { platform: "sandbox", username: await live.user("none") })).json.id as string;
      const page = await view(await signInLink(account, operator));
      await page.locator("#screen").waitFor({ state: "visible" });
      others.push(page);
    }
    // Three accounts' links from one key, at most two pages: the oldest closed.
    expect(live.server.hub.signInPages).toBe(2);
    for (const page of [first, second, ...others]) await page.context().close();
    await live.until(() => live.server.hub.signInPages === 0, 5_000);
  });

  it("refuse another user's sign-in: the session is not kept, and the right user then connects", async () => {
    const owner = await live.user("none");
    const stranger = await live.user("none");
    const account = (await live.api("POST", "/v1/accounts", { platform: "sandbox", username: owner })).json.id;
    const viewer = await view(await signInLink(account));
    await viewer.locator("#screen").waitFor({ state: "visible" });
    const page = await eventually(() => accountPages(account)[0]);
    await page.getByLabel("Username").waitFor();
    await signInOnPage(page, stranger);
    await expect.poll(() => viewer.locator("#outcome").innerText(), { timeout: 15_000 }).toContain(`Signed in as @${stranger}, but this account is @${owner}`);
    const after = await live.api("GET", `/v1/accounts/${account}`);
    expect(after.json.status).toBe("new");
    expect(await live.server.service.store.accounts.getSecret(account, "session")).toBeUndefined();
    // The page is back at sign-in; the owner signs in as themselves.
    await page.getByLabel("Username").waitFor();
    await signInOnPage(page, owner);
    await expect.poll(async () => (await live.api("GET", `/v1/accounts/${account}`)).json.status, { timeout: 15_000 }).toBe("connected");
    const post = await live.run(account, "post", { text: `by the owner ${owner}` });
    expect(post.status).toBe("succeeded");
    const posts = await live.sandboxApi("GET", `/_sandbox/posts?author=${owner}`);
    expect(posts.map((p: { text: string }) => p.text)).toContain(`by the owner ${owner}`);
    expect(await live.sandboxApi("GET", `/_sandbox/posts?author=${stranger}`)).toEqual([]);
    await viewer.context().close();
  });

  it("do not open while an action waits on the account: the viewer is told why", async () => {
    const handle = await live.user("email");
    const account = await live.account(handle);
    const action = await live.run(account, "connect");
    expect(action.status).toBe("needs_input");
    const viewer = await view(await signInLink(account));
    await expect.poll(() => viewer.locator("#outcome").innerText()).toContain("An action is running on this account");
    expect(live.server.hub.signInPages).toBe(0);
    await live.api("POST", `/v1/actions/${action.id}/cancel`);
    await viewer.context().close();
  });

  it("refuse a WebSocket from another origin, and rate-limit each link", async () => {
    const account = (await live.api("POST", "/v1/accounts", { platform: "sandbox", username: await live.user("none") })).json.id;
    const url = await signInLink(account);
    const socketStatus = (origin: string): Promise<number> =>
      new Promise((resolve) => {
        const socket = new WebSocket(`${url.replace(/^http/, "ws")}/ws`, { origin });
        socket.on("unexpected-response", (_request, response) => resolve(response.statusCode ?? 0));
        socket.on("open", () => {
          socket.close();
          resolve(101);
        });
        socket.on("error", () => undefined);
      });
    expect(await socketStatus("http://evil.example")).toBe(403);
    expect(await socketStatus(live.url.replace("http://", "https://"))).toBe(403);
    expect(await socketStatus(live.url)).toBe(101);
    await live.until(() => live.server.hub.signInPages === 0, 5_000);
    // 60 a minute for this link (the test's setting), one more each second: the burst ends in 429
    // with Retry-After before it has sent more than the limit and what came back meanwhile (a
    // machine slow to answer sends fewer a second, so the bound counts the seconds it took).
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    const started = performance.now();
    const allowed = (): number => 60 + Math.ceil((performance.now() - started) / 1000) + 5;
    while (retryAfter === null && statuses.length <= allowed()) {
      const response = await fetch(`${url}/state`);
      statuses.push(response.status);
      if (response.status === 429) retryAfter = response.headers.get("retry-after");
      await response.body?.cancel();
    }
    expect(statuses).toContain(429);
    expect(Number(retryAfter)).toBeGreaterThan(0);
  });
});
