import { chromium, type Browser, type Page } from "playwright";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, findChromium } from "../../src/browser/executable.js";
import { startLiveService, type LiveService } from "../helpers/live-service.js";

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
    // The dead hold's row is gone too (another coordinator would have replaced it anyway).
    await live.until(async () => (await engine.core.store.accountHolds.holder(account, new Date(0).toISOString())) === undefined, 10_000);
    // The live view watching it is over.
    await viewer.getByText("Disconnected.").waitFor({ state: "visible", timeout: 10_000 });
    await viewer.context().close();
  });
});
