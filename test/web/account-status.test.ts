import { AxeBuilder } from "@axe-core/playwright";
import { describe, expect, it } from "vitest";
import { signedInPage, webAppFixture } from "../helpers/web-app.js";

// An account's status in the web app (DESIGN §16): a person checks its sign-in from its page and
// the page shows what the check found, in real Chromium against a real service and the sandbox.

const web = webAppFixture();

describe("account status in the web app", () => {
  it("Check the sign-in now shows what the check found: blocked, with its reason, on the account's page and in the list", async () => {
    const handle = await web.live.user("none");
    const accountId = await web.live.account(handle);
    expect(await web.live.run(accountId, "connect")).toMatchObject({ status: "succeeded" });
    const page = await signedInPage(web.person, web.live.url, web.live.key, { device: { viewport: { width: 1280, height: 900 } } });
    await page.goto(`${web.live.url}/app/accounts/${accountId}`);
    await expect.poll(() => page.getByRole("heading", { name: /Status: connected/ }).count()).toBe(1);
    const checkedBefore = (await web.live.api("GET", `/v1/accounts/${accountId}`)).json.checked_at;

    // The platform restricts the user; the person asks for a check and the page follows the account.
    await web.live.sandboxApi("POST", `/_sandbox/users/${handle}/restrict`);
    await page.getByRole("button", { name: "Check the sign-in now" }).click();
    await page.getByRole("heading", { name: /Status: blocked/ }).waitFor({ timeout: 30_000 });
    await expect.poll(() => page.getByText(/restricted this account/).count()).toBeGreaterThan(0);
    // The page that reloaded with the result no longer says a check is queued.
    expect(await page.getByText("A check of the sign-in is queued").count()).toBe(0);
    expect(new URL(page.url()).search).toBe("");
    expect((await web.live.api("GET", `/v1/accounts/${accountId}`)).json.checked_at > checkedBefore).toBe(true);
    await page.screenshot({ path: "test-artifacts/account-blocked.png", fullPage: true });
    const serious = (await new AxeBuilder({ page }).analyze()).violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
    expect(serious.map((violation) => violation.id)).toEqual([]);

    await page.getByRole("link", { name: "Accounts" }).first().click();
    const row = page.getByRole("row", { name: new RegExp(handle) });
    await expect.poll(() => row.innerText()).toMatch(/blocked[\s\S]*restricted this account/i);
    await page.screenshot({ path: "test-artifacts/accounts-list.png", fullPage: true });
  }, 120_000);

  it("an account never signed in has no check button", async () => {
    const accountId = await web.live.account(await web.live.user("none"));
    const page = await signedInPage(web.person, web.live.url, web.live.key, { device: { viewport: { width: 390, height: 844 }, isMobile: true } });
    await page.goto(`${web.live.url}/app/accounts/${accountId}`);
    await page.getByRole("heading", { name: /Status: new/ }).waitFor();
    expect(await page.getByRole("button", { name: "Check the sign-in now" }).count()).toBe(0);
    expect(await page.locator("dt:text-is('Last checked') + dd").innerText()).toBe("never");
  }, 60_000);
});
