import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPlatformFile } from "../../src/platforms/declared/index.js";
import { clickThrough, signedInPage, webAppFixture } from "../helpers/web-app.js";

// The web app and the live browser with a declared driver (examples/drivers/sandbox.platform.json),
// as a person uses them: an account of the declared platform added in the app, its emailed code
// typed in the action page's answer box, a post run from the form the action reference builds, and
// a captcha solved in the live browser. A brought driver gets every surface a built-in one does.

const PLATFORM = "sandbox-declared";
const FILE = join(import.meta.dirname, "..", "..", "examples", "drivers", "sandbox.platform.json");

const web = webAppFixture(async () => ({ sandboxDrivers: [await loadPlatformFile(FILE)] }));

describe("a declared platform in the web app", () => {
  it("is offered when adding an account; its emailed code is typed in the action page's answer box; a post runs from the form built from its params", async () => {
    const handle = await web.live.user("email");
    const page = await signedInPage(web.person, web.live.url, web.live.key);
    await page.getByRole("link", { name: "Accounts" }).click();
    await page.getByLabel("Platform").selectOption({ label: "Sandbox Social (declared)" });
    await page.getByLabel("Sign-in name").fill(handle);
    await page.getByLabel("Password (optional)").fill("sandbox-password");
    await page.getByRole("button", { name: "Add the account" }).click();
    await page.waitForURL(/\/app\/accounts\/acc_/);
    const accountId = page.url().split("/").pop()!.split("?")[0]!;
    expect((await web.live.api("GET", `/v1/accounts/${accountId}`)).json.platform).toBe(PLATFORM);

    await page.getByRole("button", { name: "Connect" }).click();
    await page.waitForURL(/\/app\/actions\/act_/);
    await expect.poll(() => page.locator("#challenge-message").isVisible(), { timeout: 30_000 }).toBe(true);
    expect(await page.locator(".kind").innerText()).toMatch(/emailed code/i);
    await page.screenshot({ path: "test-artifacts/declared-web-challenge.png", fullPage: true });
    await page.getByLabel("Code").fill(await web.live.latestCode(handle));
    await page.getByRole("button", { name: "Send answer" }).click();
    await expect.poll(() => page.locator("h2#state-title .status").innerText(), { timeout: 30_000 }).toBe("succeeded");
    expect((await web.live.api("GET", `/v1/accounts/${accountId}`)).json.status).toBe("connected");

    await page.goto(`${web.live.url}/app/actions/new?account_id=${accountId}&type=post`);
    const text = `Posted through the declared driver from the web app ${handle}`;
    await page.getByLabel("Text").fill(text);
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await page.waitForURL(/\/app\/actions\/act_/);
    await expect.poll(() => page.locator("h2#state-title .status").innerText(), { timeout: 30_000 }).toBe("succeeded");
    expect((await web.live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`)).map((post: { text: string }) => post.text)).toEqual([text]);
    await page.context().close();
  });

  it("a captcha is solved in the live browser opened from the action page", async () => {
    const handle = await web.live.user("captcha");
    const accountId = await web.live.account(handle, { platform: PLATFORM });
    const page = await signedInPage(web.person, web.live.url, web.live.key);
    await page.goto(`${web.live.url}/app/accounts/${accountId}`);
    await page.getByRole("button", { name: "Connect" }).click();
    await page.waitForURL(/\/app\/actions\/act_/);
    const actionId = page.url().split("/").pop()!;
    await expect.poll(() => page.locator("#challenge-message").isVisible(), { timeout: 30_000 }).toBe(true);
    expect(await page.locator(".kind").innerText()).toMatch(/puzzle/i);
    const [view] = await Promise.all([page.context().waitForEvent("page"), page.getByRole("link", { name: "Open the live browser" }).click()]);
    await view.locator("#screen").waitFor({ state: "visible" });
    const word = /showing an? (\S+)/.exec(await view.locator("#message").innerText())![1]!;
    // The account's own page, as the live view shows it: each matching tile clicked through the view.
    const accountPage = web.live.server.executor.pages.get(actionId)!;
    for (const tile of await accountPage.getByRole("button", { name: word, exact: true }).all()) {
      await clickThrough(view, accountPage, tile);
      await expect.poll(() => tile.getAttribute("aria-pressed")).toBe("true");
    }
    await clickThrough(view, accountPage, accountPage.getByRole("button", { name: "Verify", exact: true }));
    await expect.poll(() => page.locator("h2#state-title .status").innerText(), { timeout: 30_000 }).toBe("succeeded");
    expect((await web.live.api("GET", `/v1/accounts/${accountId}`)).json).toMatchObject({ platform: PLATFORM, status: "connected" });
    await page.context().close();
  });
});
