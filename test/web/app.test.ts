import { type BrowserContext, type Page } from "playwright";
import { describe, expect, it } from "vitest";
import { clickThrough, DESKTOP, PHONE, seriousViolations, signedInPage, webAppFixture } from "../helpers/web-app.js";

// The web app as a person uses it: real Chromium (desktop and phone) against a real service,
// real SQLite and the real sandbox platform.

const web = webAppFixture();

/** Everything the browser keeps for the page: storage of both kinds, script-visible cookies, and every cookie value. */
async function browserStorage(page: Page): Promise<string> {
  const inPage = await page.evaluate(() => JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, cookie: document.cookie }));
  const cookies = await page.context().cookies();
  return inPage + JSON.stringify(cookies);
}

async function addAccount(page: Page, username: string): Promise<string> {
  await page.getByRole("link", { name: "Accounts" }).click();
  await page.getByLabel("Sign-in name").fill(username);
  await page.getByLabel("Password (optional)").fill("sandbox-password");
  await page.getByRole("button", { name: "Add the account" }).click();
  await page.waitForURL(/\/app\/accounts\/acc_/).catch(async (error: unknown) => {
    // Say where the form left the page (a refusal shows its message there).
    const shown = await page.locator("main").innerText().catch(() => "(no main)");
    throw new Error(`adding ${username} did not reach the account's page: at ${page.url()}: ${shown.slice(0, 500)}`, { cause: error });
  });
  return page.url().split("/").pop()!.split("?")[0]!;
}

describe("signing in and out", () => {
  for (const [name, device] of [["desktop", DESKTOP], ["phone", PHONE]] as const) {
    it(`on a ${name}: the key never reaches browser storage, and signing out ends the session`, async () => {
      const page = await signedInPage(web.person, web.live.url, web.live.key, { device });
      await expect.poll(() => page.getByRole("heading", { name: "Actions" }).isVisible()).toBe(true);
      for (const path of ["/app/accounts", "/app/credits", "/app/keys", "/app/actions/new"]) {
        await page.goto(web.live.url + path);
        expect(await page.content()).not.toContain(web.live.key);
      }
      const stored = await browserStorage(page);
      expect(stored).not.toContain(web.live.key);
      expect(stored).not.toContain(web.live.key.slice(3, 20));
      expect(await page.evaluate(() => document.cookie)).toBe(""); // HttpOnly: no script reads it
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.waitForURL(/\/app\/sign-in\?signed_out=1/);
      await expect.poll(() => page.getByRole("status").first().innerText()).toContain("You are signed out.");
      await page.goto(`${web.live.url}/app/accounts`);
      expect(page.url()).toContain("/app/sign-in?next=%2Fapp%2Faccounts");
      await page.context().close();
    });
  }
});

describe("another site cannot act with a person's session", () => {
  it("a form on another site (cross-site or same-site on another port) that posts to the app is refused and adds nothing", async () => {
    const page = await signedInPage(web.person, web.live.url, web.live.key);
    const before = (await web.live.api("GET", "/v1/accounts")).json.data.length;
    const servicePort = new URL(web.live.url).port;
    const attack = `<form id="f" method="post" action="${web.live.url}/app/accounts"><input name="platform" value="sandbox"><input name="username" value="mallory"><input name="password" value="x"></form><script>document.getElementById("f").submit()</script>`;
    // localhost is another site than 127.0.0.1 (no cookie is sent); the sandbox's port is the same site, another origin.
    for (const evil of [`http://localhost:${servicePort}/evil`, `${web.live.sandbox.url}/evil`]) {
      await page.route(evil, (route) => route.fulfill({ contentType: "text/html", body: attack }));
      const response = page.waitForResponse((candidate) => candidate.url().startsWith(`${web.live.url}/app/accounts`) || candidate.url().includes("/app/sign-in"));
      await page.goto(evil);
      const answered = await response;
      expect([303, 403], evil).toContain(answered.status());
      await page.unroute(evil);
    }
    expect((await web.live.api("GET", "/v1/accounts")).json.data.length).toBe(before);
    await page.context().close();
  });
});

describe("accounts and actions", () => {
  it("an account is added and connected through an emailed code typed in the action page's answer box", async () => {
    const handle = await web.live.user("email");
    const page = await signedInPage(web.person, web.live.url, web.live.key);
    const accountId = await addAccount(page, handle);
    await expect.poll(() => page.getByRole("status").first().innerText()).toContain("Account added.");
    await page.getByRole("button", { name: "Connect" }).click();
    await page.waitForURL(/\/app\/actions\/act_/);
    // The page follows the action on its own until the challenge shows.
    await expect.poll(() => page.locator("#challenge-message").isVisible(), { timeout: 30_000 }).toBe(true);
    expect(await page.locator(".kind").innerText()).toMatch(/emailed code/i);
    await expect.poll(() => page.locator("#countdown").innerText()).toMatch(/^\d+:\d\d$/);
    await page.screenshot({ path: "test-artifacts/web-challenge-desktop.png", fullPage: true });
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel("Code").fill(await web.live.latestCode(handle));
    await page.getByRole("button", { name: "Send answer" }).click();
    await expect.poll(() => page.locator("h2#state-title .status").innerText(), { timeout: 30_000 }).toBe("succeeded");
    expect((await web.live.api("GET", `/v1/accounts/${accountId}`)).json.status).toBe("connected");
    await page.goto(`${web.live.url}/app/accounts/${accountId}`);
    expect(await page.locator("#status-title .status").innerText()).toBe("connected");
    await page.context().close();
  });

  it("on a phone: a post is run from the form built from the action reference, and the page shows it finish", async () => {
    const handle = await web.live.user("none");
    const accountId = await web.live.account(handle);
    const page = await signedInPage(web.person, web.live.url, web.live.key, { device: PHONE });
    await page.getByRole("link", { name: "Run an action" }).tap();
    await page.getByLabel("Account", { exact: true }).selectOption(accountId);
    await page.waitForURL(new RegExp(`account_id=${accountId}`));
    await page.getByLabel("Action", { exact: true }).selectOption("post");
    await page.waitForURL(/type=post/);
    const text = `Hello from the web app ${handle}`;
    await page.getByLabel("Text").fill(text);
    await page.getByRole("button", { name: "Run", exact: true }).tap();
    await page.waitForURL(/\/app\/actions\/act_/);
    await expect.poll(() => page.locator("h2#state-title .status").innerText(), { timeout: 30_000 }).toBe("succeeded");
    const url = await page.getByRole("link", { name: /\/posts\// }).innerText();
    expect((await web.live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`)).map((post: { text: string }) => post.text)).toEqual([text]);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/posts\//);
    await page.screenshot({ path: "test-artifacts/web-action-phone.png", fullPage: true });
    await page.context().close();
  });

  it("a captcha is solved in the live browser opened from the action page, which then shows the action succeed", async () => {
    const accountId = await web.live.account("frank");
    const page = await signedInPage(web.person, web.live.url, web.live.key);
    await page.goto(`${web.live.url}/app/accounts/${accountId}`);
    await page.getByRole("button", { name: "Connect" }).click();
    await page.waitForURL(/\/app\/actions\/act_/);
    const actionId = page.url().split("/").pop()!;
    await expect.poll(() => page.locator("#challenge-message").isVisible(), { timeout: 30_000 }).toBe(true);
    expect(await page.locator(".kind").innerText()).toMatch(/puzzle/i);
    expect(await page.getByLabel("Code").count()).toBe(0); // a captcha has no answer box
    const [view] = await Promise.all([page.context().waitForEvent("page"), page.getByRole("link", { name: "Open the live browser" }).click()]);
    await view.locator("#screen").waitFor({ state: "visible" });
    const word = /showing an? (\S+)/.exec(await view.locator("#message").innerText())![1]!;
    const accountPage = web.live.server.executor.pages.get(actionId)!;
    for (const tile of await accountPage.getByRole("button", { name: word, exact: true }).all()) {
      await clickThrough(view, accountPage, tile);
      await expect.poll(() => tile.getAttribute("aria-pressed")).toBe("true");
    }
    await clickThrough(view, accountPage, accountPage.getByRole("button", { name: "Verify", exact: true }));
    await expect.poll(() => page.locator("h2#state-title .status").innerText(), { timeout: 30_000 }).toBe("succeeded");
    await page.context().close();
  });
});

describe("every page, for people and their tools", () => {
  async function tour(page: Page, device: string, ids: { account: string; action: string }): Promise<Record<string, string[]>> {
    const found: Record<string, string[]> = {};
    const pages: [string, string][] = [
      ["actions", "/app/actions"],
      ["run", `/app/actions/new?account_id=${ids.account}&type=lookup_person`],
      ["action", `/app/actions/${ids.action}`],
      ["accounts", "/app/accounts"],
      ["account", `/app/accounts/${ids.account}`],
      ["credits", "/app/credits"],
      ["keys", "/app/keys"],
      ["webhooks", "/app/webhooks"],
      ["feedback", "/app/feedback"],
    ];
    for (const [name, path] of pages) {
      await page.goto(web.live.url + path);
      await page.screenshot({ path: `test-artifacts/web-${name}-${device}.png`, fullPage: true });
      found[name] = await seriousViolations(page);
    }
    return found;
  }

  it("have no serious or critical accessibility violations, on a desktop and on a phone, and start with a skip link", async () => {
    const accountId = await web.live.account(await web.live.user("none"));
    const action = await web.live.run(accountId, "lookup_person", { handle: "frank" });
    const clean = { actions: [], run: [], action: [], accounts: [], account: [], credits: [], keys: [], webhooks: [], feedback: [] };
    // The two devices at once, each in its own context of the one browser: a scan is mostly the browser's work.
    // Both run to their end before a failure of either is reported, so neither outlives the test.
    const devices = await Promise.allSettled(
      ([["desktop", DESKTOP], ["phone", PHONE]] as const).map(async ([name, device]) => {
        const context: BrowserContext = await web.person.newContext(device);
        const signIn = await context.newPage();
        await signIn.goto(`${web.live.url}/app/sign-in`);
        expect(await seriousViolations(signIn), `sign-in on a ${name}`).toEqual([]);
        await signIn.screenshot({ path: `test-artifacts/web-sign-in-${name}.png`, fullPage: true });
        await context.close();
        const page = await signedInPage(web.person, web.live.url, web.live.key, { device });
        expect(await tour(page, name, { account: accountId, action: action.id }), `on a ${name}`).toEqual(clean);
        await page.keyboard.press("Tab");
        expect(await page.evaluate(() => document.activeElement?.textContent), `on a ${name}`).toBe("Skip to content");
        await page.context().close();
      }),
    );
    for (const device of devices) if (device.status === "rejected") throw device.reason;
  }, 120_000);
});
