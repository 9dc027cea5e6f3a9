import { mkdirSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, findChromium } from "../../src/browser/executable.js";
import { OffsetClock } from "../helpers/clock.js";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { eventually } from "../helpers/scripted-executor.js";

let live: LiveService;
let person: Browser;
/** The service's clock: real time plus an offset the test moves, to reach a link's expiry. */
const clock = new OffsetClock();

beforeAll(async () => {
  live = await startLiveService({ server: { clock } });
  person = await chromium.launch({ executablePath: findChromium(process.env.BROWSER_EXECUTABLE_PATH)?.path, args: CHROMIUM_ARGS });
  mkdirSync("test-artifacts", { recursive: true });
});
afterAll(async () => {
  await person?.close();
  await live?.close();
});

async function createUser(challenge: string): Promise<string> {
  const handle = `${challenge}${Math.random().toString(36).slice(2, 8)}`;
  await live.sandboxApi("POST", "/_sandbox/users", { handle, name: `Test ${challenge}`, password: "sandbox-password", challenge });
  return handle;
}

async function openLive(url: string, viewport = { width: 1280, height: 800 }, options: { isMobile?: boolean; hasTouch?: boolean } = {}): Promise<Page> {
  const context = await person.newContext({ viewport, ...options });
  const page = await context.newPage();
  await page.goto(url);
  return page;
}

/** Clicks, through the live view, where an element of the account's page is. */
async function clickThrough(view: Page, accountPage: Page, target: ReturnType<Page["locator"]>): Promise<void> {
  const box = (await target.boundingBox())!;
  const viewport = accountPage.viewportSize()!;
  const screen = view.locator("#screen");
  await screen.waitFor({ state: "visible" });
  const shown = (await screen.boundingBox())!;
  await screen.click({
    position: { x: ((box.x + box.width / 2) / viewport.width) * shown.width, y: ((box.y + box.height / 2) / viewport.height) * shown.height },
  });
}

describe("live browser", () => {
  it("a person solves frank's captcha by clicking through the live view, and the action succeeds", async () => {
    const account = await live.account("frank");
    const action = await live.run(account, "connect");
    expect(action.status).toBe("needs_input");
    expect(action.challenge.kind).toBe("captcha");
    const view = await openLive(action.challenge.sign_in_url);
    await expect.poll(() => view.locator("#message").innerText()).toContain("Select all tiles showing a");
    const word = /showing an? (\S+)/.exec(await view.locator("#message").innerText())![1]!;
    await view.locator("#screen").waitFor({ state: "visible" });
    await view.screenshot({ path: "test-artifacts/live-desktop.png" });
    const accountPage = live.server.executor.pages.get(action.id)!;
    for (const tile of await accountPage.getByRole("button", { name: word, exact: true }).all()) {
      await clickThrough(view, accountPage, tile);
      await expect.poll(() => tile.getAttribute("aria-pressed")).toBe("true");
    }
    await clickThrough(view, accountPage, accountPage.getByRole("button", { name: "Verify", exact: true }));
    const done = await live.finished(action.id);
    expect(done).toMatchObject({ status: "succeeded", result: { signed_in: true } });
    await expect.poll(() => view.locator("#status").innerText()).toBe("succeeded");
    await view.context().close();
  });

  it("an email code is answered through the live page's answer box", async () => {
    const handle = await createUser("email");
    const account = await live.account(handle);
    const action = await live.run(account, "connect");
    expect(action.challenge.kind).toBe("email_code");
    const view = await openLive(action.challenge.sign_in_url, { width: 390, height: 844 }, { isMobile: true, hasTouch: true });
    await view.getByLabel("Code").waitFor();
    await view.locator("#screen").waitFor({ state: "visible" });
    await view.screenshot({ path: "test-artifacts/live-phone.png", fullPage: true });
    const [mail] = await live.sandboxApi("GET", `/_sandbox/outbox?to=${handle}`);
    await view.getByLabel("Code").fill(mail.code);
    await view.getByRole("button", { name: "Send answer" }).tap();
    expect((await live.finished(action.id)).status).toBe("succeeded");
    await expect.poll(() => view.locator("#status").innerText()).toBe("succeeded");
    await view.context().close();
  });

  it("an email code a person types into the account's page itself: \"remember this device\" was ticked while it waited, and the device is remembered", async () => {
    const handle = await createUser("email");
    const account = await live.account(handle);
    const action = await live.run(account, "connect");
    expect(action.challenge.kind).toBe("email_code");
    // What the live view shows and forwards input to: the account's own page.
    const accountPage = live.server.executor.pages.get(action.id)!;
    await expect.poll(() => accountPage.getByLabel("Remember this device").isChecked()).toBe(true);
    const [mail] = await live.sandboxApi("GET", `/_sandbox/outbox?to=${handle}`);
    await accountPage.getByLabel("Security code").fill(mail.code);
    await accountPage.getByRole("button", { name: "Verify", exact: true }).click();
    expect((await live.finished(action.id)).status).toBe("succeeded");
    expect(await live.sandboxApi("POST", `/_sandbox/users/${handle}/devices/forget`)).toMatchObject({ forgotten: 1 });
  });

  it("a device approval is watched live while it is approved through the sandbox", async () => {
    const handle = await createUser("device");
    const account = await live.account(handle);
    const action = await live.run(account, "connect");
    expect(action.challenge.kind).toBe("device_approval");
    const view = await openLive(action.challenge.sign_in_url);
    await view.locator("#screen").waitFor({ state: "visible" });
    expect(await view.getByLabel("Code").isVisible()).toBe(false);
    await live.sandboxApi("POST", "/_sandbox/devices/approve", { handle });
    expect((await live.finished(action.id)).status).toBe("succeeded");
    await expect.poll(() => view.locator("#status").innerText()).toBe("succeeded");
    await view.context().close();
  });

  it("an owner sign-in link connects an account created without a password; a post then needs no challenge", async () => {
    const handle = await createUser("email");
    const created = await live.api("POST", "/v1/accounts", { platform: "sandbox", username: handle });
    expect(created.json.has_password).toBe(false);
    const link = await live.api("POST", `/v1/accounts/${created.json.id}/sign-in-links`);
    expect(link.status).toBe(201);
    expect(link.json.url).toMatch(/\/live\/[A-Za-z0-9_-]{43}$/);
    const view = await openLive(link.json.url);
    await view.locator("#screen").waitFor({ state: "visible" });
    const signInPage = await eventually(() => [...live.server.pool.contextOf(created.json.id)?.pages() ?? []][0]);
    await signInPage.getByLabel("Username").waitFor();
    const type = async (field: ReturnType<Page["getByLabel"]>, text: string): Promise<void> => {
      await clickThrough(view, signInPage, field);
      await view.getByLabel("Type into the page").fill(text);
      await view.getByRole("button", { name: "Type", exact: true }).click();
      await expect.poll(() => field.inputValue()).toBe(text);
    };
    await type(signInPage.getByLabel("Username"), handle);
    await type(signInPage.getByLabel("Password"), "sandbox-password");
    await clickThrough(view, signInPage, signInPage.getByRole("button", { name: "Sign in", exact: true }));
    await signInPage.getByLabel("Security code").waitFor();
    const [mail] = await live.sandboxApi("GET", `/_sandbox/outbox?to=${handle}`);
    await type(signInPage.getByLabel("Security code"), mail.code);
    await clickThrough(view, signInPage, signInPage.getByRole("button", { name: "Verify", exact: true }));
    await expect.poll(() => view.locator("#status").innerText(), { timeout: 15_000 }).toBe("connected");
    expect((await live.api("GET", `/v1/accounts/${created.json.id}`)).json.status).toBe("connected");
    const post = await live.run(created.json.id, "post", { text: `posted after a hand sign-in ${handle}` });
    expect(post.status).toBe("succeeded");
    await view.context().close();
  });

  it("answers 404 for an unknown link and 410 once a link is over 30 minutes old, with the privacy headers", async () => {
    const unknown = await fetch(`${live.url}/live/${"A".repeat(43)}`);
    expect(unknown.status).toBe(404);
    const account = await live.account("alice");
    const link = await live.api("POST", `/v1/accounts/${account}/sign-in-links`);
    const fresh = await fetch(link.json.url);
    expect(fresh.status).toBe(200);
    for (const response of [unknown, fresh]) {
      expect(response.headers.get("referrer-policy")).toBe("no-referrer");
      expect(response.headers.get("cache-control")).toBe("no-store");
      expect(response.headers.get("x-robots-tag")).toContain("noindex");
      expect(response.headers.get("content-security-policy")).toMatch(/default-src 'none'.*script-src 'nonce-[^']+'.*frame-ancestors 'none'/);
    }
    clock.offsetMs = 30 * 60_000 + 1_000;
    try {
      expect((await fetch(link.json.url)).status).toBe(410);
    } finally {
      clock.offsetMs = 0;
    }
  });
});
