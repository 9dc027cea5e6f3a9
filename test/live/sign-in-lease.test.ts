import { chromium, type Browser, type Page } from "playwright";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, findChromium } from "../../src/browser/executable.js";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { gate } from "../helpers/scripted-executor.js";

// An owner's sign-in hold dies with its coordinator's lease (DESIGN §11, issue 40 item 4): once the
// lease is lost, another coordinator may take the account and open its own sign-in page, so the
// page this coordinator holds must close with the lease, and the live views watching it.
let live: LiveService;
let person: Browser;

beforeAll(async () => {
  live = await startLiveService();
  person = await chromium.launch({ executablePath: findChromium(process.env.BROWSER_EXECUTABLE_PATH)?.path, args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await person?.close();
  await live?.close();
});

async function view(url: string): Promise<Page> {
  const page = await (await person.newContext()).newPage();
  await page.goto(url);
  return page;
}

describe("a coordinator that loses its lease", () => {
  it("closes the sign-in pages held under it, and their live views; the account is free for anyone", async () => {
    const { engine } = live.server.service;
    const { runner } = engine.core;
    const account = (await live.api("POST", "/v1/accounts", { platform: "sandbox", username: await live.user("none") })).json.id as string;
    const link = await live.api("POST", `/v1/accounts/${account}/sign-in-links`);
    expect(link.status).toBe(201);
    const viewer = await view(link.json.url);
    await viewer.locator("#screen").waitFor({ state: "visible" });
    expect(live.server.hub.signInPages).toBe(1);
    const lostId = runner.runnerId;
    expect(await engine.core.store.accountHolds.holder(account, runner.leaseNow())).toBe(lostId);

    // The lease ends before it is renewed (a stalled process, an unreachable database): the next
    // renewal finds it lost and the runner registers again under a new id.
    await engine.core.store.runners.expire(lostId, runner.leaseNow());
    await runner.renew();
    expect(runner.runnerId).not.toBe(lostId);

    await live.until(() => live.server.hub.signInPages === 0, 10_000);
    // The account is free once the page has gone: a hold can be taken on it again (here under the runner's new id), and dropped.
    await live.until(() => runner.holdAccount(account), 10_000);
    runner.releaseAccount(account);
    // The live view watching it is over.
    await viewer.getByText("Disconnected.").waitFor({ state: "visible", timeout: 10_000 });
    await viewer.context().close();
  });

  it("does not keep a sign-in page whose hold it lost while the page was opening", async () => {
    const { engine } = live.server.service;
    const { runner } = engine.core;
    const account = (await live.api("POST", "/v1/accounts", { platform: "sandbox", username: await live.user("none") })).json.id as string;
    const link = await live.api("POST", `/v1/accounts/${account}/sign-in-links`);
    expect(link.status).toBe(201);
    // The page's browser context is slow to come: the hold is taken, the page not open yet.
    const { pool } = live.server;
    const acquire = pool.acquire.bind(pool);
    const reached = gate();
    const release = gate();
    pool.acquire = async (...args) => {
      if (args[0] === account) {
        reached.open();
        await release.promise;
      }
      return acquire(...args);
    };
    try {
      const viewer = await (await person.newContext()).newPage();
      const socketClosed = new Promise<void>((resolve) => viewer.on("websocket", (socket) => socket.on("close", () => resolve())));
      await viewer.goto(link.json.url);
      await reached.promise;
      const lostId = runner.runnerId;
      expect(await engine.core.store.accountHolds.holder(account, runner.leaseNow())).toBe(lostId);
      await engine.core.store.runners.expire(lostId, runner.leaseNow());
      await runner.renew();
      release.open();
      // The opening ends either way: a page shown (kept by mistake) or the live view closed without one.
      await Promise.race([socketClosed, viewer.locator("#screen").waitFor({ state: "visible", timeout: 30_000 })]);
      expect(live.server.hub.signInPages).toBe(0);
      expect(await viewer.locator("#screen").isVisible()).toBe(false);
      await viewer.context().close();
    } finally {
      release.open();
      pool.acquire = acquire;
    }
  });
});
