import { AxeBuilder } from "@axe-core/playwright";
import { mkdirSync } from "node:fs";
import { chromium, type Browser } from "playwright";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, findChromium } from "../../src/browser/executable.js";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { signedInPage } from "../helpers/web-app.js";

// An account's status in the web app (DESIGN §16): a person checks its sign-in from its page and
// the page shows what the check found, in real Chromium against a real service and the sandbox.

let live: LiveService;
let person: Browser;

beforeAll(async () => {
  live = await startLiveService();
  person = await chromium.launch({ executablePath: findChromium(process.env.BROWSER_EXECUTABLE_PATH)?.path, args: CHROMIUM_ARGS });
  mkdirSync("test-artifacts", { recursive: true });
}, 60_000);
afterAll(async () => {
  await person?.close();
  await live?.close();
});

describe("account status in the web app", () => {
  it("Check the sign-in now shows what the check found: blocked, with its reason, on the account's page and in the list", async () => {
    const handle = await live.user("none");
    const accountId = await live.account(handle);
    expect(await live.run(accountId, "connect")).toMatchObject({ status: "succeeded" });
    const page = await signedInPage(person, live.url, live.key, { device: { viewport: { width: 1280, height: 900 } } });
    await page.goto(`${live.url}/app/accounts/${accountId}`);
    await expect.poll(() => page.getByRole("heading", { name: /Status: connected/ }).count()).toBe(1);
    const checkedBefore = (await live.api("GET", `/v1/accounts/${accountId}`)).json.checked_at;

    // The platform restricts the user; the person asks for a check and the page follows the account.
    await live.sandboxApi("POST", `/_sandbox/users/${handle}/restrict`);
    await page.getByRole("button", { name: "Check the sign-in now" }).click();
    await page.getByRole("heading", { name: /Status: blocked/ }).waitFor({ timeout: 30_000 });
    await expect.poll(() => page.getByText(/restricted this account/).count()).toBeGreaterThan(0);
    // The page that reloaded with the result no longer says a check is queued.
    expect(await page.getByText("A check of the sign-in is queued").count()).toBe(0);
    expect(new URL(page.url()).search).toBe("");
    expect((await live.api("GET", `/v1/accounts/${accountId}`)).json.checked_at > checkedBefore).toBe(true);
    await page.screenshot({ path: "test-artifacts/account-blocked.png", fullPage: true });
    const serious = (await new AxeBuilder({ page }).analyze()).violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
    expect(serious.map((violation) => violation.id)).toEqual([]);

    await page.getByRole("link", { name: "Accounts" }).first().click();
    const row = page.getByRole("row", { name: new RegExp(handle) });
    await expect.poll(() => row.innerText()).toMatch(/blocked[\s\S]*restricted this account/i);
    await page.screenshot({ path: "test-artifacts/accounts-list.png", fullPage: true });
  }, 120_000);

  it("an account never signed in has no check button", async () => {
    const accountId = await live.account(await live.user("none"));
    const page = await signedInPage(person, live.url, live.key, { device: { viewport: { width: 390, height: 844 }, isMobile: true } });
    await page.goto(`${live.url}/app/accounts/${accountId}`);
    await page.getByRole("heading", { name: /Status: new/ }).waitFor();
    expect(await page.getByRole("button", { name: "Check the sign-in now" }).count()).toBe(0);
    expect(await page.locator("dt:text-is('Last checked') + dd").innerText()).toBe("never");
  }, 60_000);
});
