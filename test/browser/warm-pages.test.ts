import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { Page } from "playwright";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { eventually, gate } from "../helpers/scripted-executor.js";
import { sql, value } from "../helpers/sql.js";

// Real Chromium against a real sandbox, through the REST API: which pages outlive their action
// (a kept page spares the next action a new renderer process) and which never do.
let live: LiveService;
/**
 * How long a kept page waits for its account's next action: long enough that the next action of a
 * test (or the third account's lookup below) always comes first, short enough to watch it expire.
 */
const WARM_PAGE_SECONDS = 8;

beforeAll(async () => {
  live = await startLiveService({ env: { ACTION_SERVICE_WARM_PAGES: "2", ACTION_SERVICE_WARM_PAGE_SECONDS: String(WARM_PAGE_SECONDS) } });
});

afterAll(async () => {
  await live?.close();
});

afterEach(async () => {
  await live.sandboxApi("POST", "/_sandbox/settings", { redesign: false });
});

/** Runs an action and returns it with the page it ran in. */
async function runOn(accountId: string, type: string, params: Record<string, unknown> = {}): Promise<{ action: any; page: Page }> {
  let page: Page | undefined;
  const seen = (_id: string, shown: Page | undefined): void => {
    page ??= shown;
  };
  live.server.executor.events.on("page", seen);
  try {
    const action = await live.run(accountId, type, params);
    return { action, page: page! };
  } finally {
    live.server.executor.events.off("page", seen);
  }
}

async function connected(): Promise<string> {
  const accountId = await live.account(await live.user("none"));
  expect((await live.run(accountId, "connect")).status).toBe("succeeded");
  return accountId;
}

const pagesOf = (accountId: string): Page[] => live.server.pool.contextOf(accountId)?.pages() ?? [];
const sealedSession = async (accountId: string): Promise<Buffer> => (await value<Buffer>(live.server.service.store, sql`SELECT session_sealed FROM accounts WHERE id = ${accountId}`))!;

describe("warm pages", () => {
  it("an account's next action runs in the page its last one left open, and the session is not sealed again when nothing changed", async () => {
    const accountId = await connected();
    const first = await runOn(accountId, "post", { text: `first ${Date.now()}` });
    expect(first.action.status).toBe("succeeded");
    expect(pagesOf(accountId)).toEqual([first.page]);
    const session = await sealedSession(accountId);
    const second = await runOn(accountId, "post", { text: `second ${Date.now()}` });
    expect(second.action.status).toBe("succeeded");
    expect(second.page).toBe(first.page);
    expect(second.page.url()).toMatch(/\/posts\//);
    // The cookies did not change: the sealed session (a new nonce at every seal) is the same bytes.
    expect((await sealedSession(accountId)).equals(session)).toBe(true);
  });

  it("keeps at most ACTION_SERVICE_WARM_PAGES pages, closing the least recently kept, and closes a kept page after ACTION_SERVICE_WARM_PAGE_SECONDS while the context stays warm", async () => {
    const accounts = await Promise.all([connected(), connected(), connected()]);
    for (const accountId of accounts) expect((await live.run(accountId, "lookup_person", { handle: "alice" })).status).toBe("succeeded");
    expect(live.server.pool.keptPages).toBe(2);
    const open = (): number[] => accounts.map((accountId) => pagesOf(accountId).length);
    await live.until(() => open().join() === "0,1,1");
    await live.until(() => live.server.pool.keptPages === 0 && open().join() === "0,0,0", (WARM_PAGE_SECONDS + 20) * 1000);
    for (const accountId of accounts) expect(live.server.pool.contextOf(accountId)).toBeDefined();
  }, 120_000);

  it("a platform's refusal keeps the page; a page the driver did not recognise is closed", async () => {
    const accountId = await connected();
    const missing = await runOn(accountId, "lookup_person", { handle: "nobody-here" });
    expect(missing.action.error.code).toBe("not_found");
    expect(pagesOf(accountId)).toEqual([missing.page]);
    await live.sandboxApi("POST", "/_sandbox/settings", { redesign: true });
    const changed = await runOn(accountId, "post", { text: `redesigned ${Date.now()}` });
    expect(changed.action.error.code).toBe("ui_changed");
    expect(changed.page).toBe(missing.page);
    expect(live.server.pool.keptPages).toBe(0);
    await live.until(() => changed.page.isClosed());
    expect(pagesOf(accountId)).toEqual([]);
  });

  it("a page that paused for a challenge never outlives its action (it may have been driven through a live link)", async () => {
    const handle = await live.user("email");
    const accountId = await live.account(handle);
    const { action, page } = await runOn(accountId, "connect");
    expect(action.status).toBe("needs_input");
    const answered = await live.api("POST", `/v1/actions/${action.id}/answer`, { answer: await live.latestCode(handle) });
    expect(answered.status).toBe(202);
    expect((await live.wait(action.id)).status).toBe("succeeded");
    expect(live.server.pool.keptPages).toBe(0);
    // Well before the kept-page timeout (8 s).
    await live.until(() => page.isClosed(), 5_000);
    expect(pagesOf(accountId)).toEqual([]);
  });

  it("an account without a warm context runs in the context and page opened ahead while nothing ran, with its saved session set", async () => {
    const handle = await live.user("email");
    const accountId = await live.account(handle);
    const paused = await live.run(accountId, "connect");
    expect((await live.api("POST", `/v1/actions/${paused.id}/answer`, { answer: await live.latestCode(handle) })).status).toBe(202);
    expect((await live.wait(paused.id)).status).toBe("succeeded");
    await live.server.pool.forget(accountId);
    // Another account's action ends: the pool opens the spare context and page.
    await connected();
    const browser = await live.server.pool.browser();
    await live.until(() => browser.contexts().length === live.server.pool.size + 1);
    const openedAhead = new Set(browser.contexts());
    const { action, page } = await runOn(accountId, "post", { text: `cold ${Date.now()}` });
    expect(action.status).toBe("succeeded");
    expect(openedAhead.has(page.context())).toBe(true);
    // The saved session was set in it: no new e-mailed code was asked for.
    expect(live.history(action.id).map((entry) => entry.status)).toEqual(["queued", "running", "succeeded"]);
  });

  it("an action canceled while its account's browser context is being made opens no page and does nothing", async () => {
    const accountId = await connected();
    // Held where the executor asks the pool for the account's context: the cancel comes first.
    const asked = gate();
    const released = gate();
    const acquire = live.server.pool.acquire.bind(live.server.pool);
    const held = vi.spyOn(live.server.pool, "acquire").mockImplementation(async (...args) => {
      asked.open();
      await released.promise;
      return acquire(...args);
    });
    const opened: string[] = [];
    const seen = (id: string, page: Page | undefined): void => void (page && opened.push(id));
    live.server.executor.events.on("page", seen);
    try {
      const text = `Never posted ${Date.now()}`;
      const action = (await live.api("POST", "/v1/actions", { account_id: accountId, type: "post", params: { text } })).json;
      await asked.promise;
      expect((await live.api("POST", `/v1/actions/${action.id}/cancel`)).json.status).toBe("canceled");
      released.open();
      await eventually(async () => live.server.service.engine.core.runner.activeCount === 0);
      expect(opened).not.toContain(action.id);
      expect(await live.sandboxApi("GET", `/_sandbox/posts?author=${(await live.api("GET", `/v1/accounts/${accountId}`)).json.username}`)).not.toContainEqual(expect.objectContaining({ text }));
    } finally {
      live.server.executor.events.off("page", seen);
      held.mockRestore();
    }
  });
});
