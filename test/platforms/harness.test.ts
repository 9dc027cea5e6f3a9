import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright";
import { launchChromium, loopbackContext } from "./support/browser.js";
import { startGhost, type Ghost } from "./support/ghost.js";
import { CAPTCHA_ANSWER, CAPTCHA_QUESTION, CAROL_USER_PAGE_TEXT, startMediaWiki, totpCode, type MediaWiki } from "./support/mediawiki.js";

const BAD_LOGINS_BEFORE_CAPTCHA = 3;

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

/** Fills the login form and submits it, answering the captcha question when the form asks it. */
async function submitWikiLogin(page: Page, name: string, password: string): Promise<void> {
  await page.getByLabel("Username").fill(name);
  await page.getByLabel("Password").fill(password);
  if (await page.getByText(CAPTCHA_QUESTION).isVisible()) await page.locator('input[name="captchaWord"]').fill(CAPTCHA_ANSWER);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.waitForLoadState();
}

describe("MediaWiki harness", () => {
  let wiki: MediaWiki;
  let context: BrowserContext;
  beforeAll(async () => {
    wiki = await startMediaWiki({ captchaBadLoginAttempts: BAD_LOGINS_BEFORE_CAPTCHA });
  });
  afterAll(async () => {
    await wiki?.stop();
  });
  beforeAll(async () => {
    context = await loopbackContext(browser);
  });
  afterAll(async () => {
    await context?.close();
  });

  it("a fresh wiki answers and Carol's seeded user page reads back", async () => {
    expect(wiki.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await wiki.pageText("User:Carol")).toBe(CAROL_USER_PAGE_TEXT);
    expect(await wiki.pageText("User:Nobody here")).toBeUndefined();
    const users = await wiki.api({ action: "query", list: "users", ususers: "Bob|Carol" });
    expect(users.query.users.map((user: { name: string; missing?: string }) => [user.name, "missing" in user])).toEqual([["Bob", false], ["Carol", false]]);
  });

  it("a user with TOTP enabled is asked for the two-factor token, and the code from the returned secret signs in", async () => {
    const dave = await wiki.createUser("Dave", "Dave-Pass-1234");
    const secret = await wiki.enableTotp(dave.name);
    const page = await context.newPage();
    await page.goto(`${wiki.url}/index.php?title=Special:UserLogin`);
    await submitWikiLogin(page, dave.name, dave.password);
    const token = page.getByLabel("Two-factor token or recovery code");
    await expect.poll(() => token.isVisible()).toBe(true);

    const code = totpCode(secret);
    await token.fill(code === "000000" ? "111111" : "000000");
    await page.getByRole("button", { name: "Continue login" }).click();
    await page.waitForLoadState();
    expect(await page.getByText("Verification failed.").isVisible()).toBe(true);

    await token.fill(code);
    await page.getByRole("button", { name: "Continue login" }).click();
    await page.waitForLoadState();
    expect(await page.locator("#pt-userpage").innerText()).toBe("Dave");
    await page.close();
  });

  it("with TOTP disabled again, the same user signs in with the password alone", async () => {
    await wiki.disableTotp("Dave");
    const page = await context.newPage();
    await context.clearCookies();
    await page.goto(`${wiki.url}/index.php?title=Special:UserLogin`);
    await submitWikiLogin(page, "Dave", "Dave-Pass-1234");
    expect(await page.locator("#pt-userpage").innerText()).toBe("Dave");
    await page.close();
  });

  it(`after ${BAD_LOGINS_BEFORE_CAPTCHA} wrong passwords the login form asks the captcha question, and its answer lets the right password in`, async () => {
    const page = await context.newPage();
    await context.clearCookies();
    await page.goto(`${wiki.url}/index.php?title=Special:UserLogin`);
    expect(await page.getByText(CAPTCHA_QUESTION).count()).toBe(0);
    for (let attempt = 1; attempt <= BAD_LOGINS_BEFORE_CAPTCHA; attempt++) {
      await submitWikiLogin(page, "Carol", `Wrong-Pass-${attempt}`);
      expect(await page.getByText("Incorrect username or password entered.").isVisible()).toBe(true);
      // The page answering the last allowed wrong password already carries the question.
      expect(await page.getByText(CAPTCHA_QUESTION).isVisible()).toBe(attempt === BAD_LOGINS_BEFORE_CAPTCHA);
    }
    await page.goto(`${wiki.url}/index.php?title=Special:UserLogin`);
    expect(await page.getByText(CAPTCHA_QUESTION).isVisible()).toBe(true);
    await submitWikiLogin(page, "Carol", "Carol-Pass-1234");
    expect(await page.locator("#pt-userpage").innerText()).toBe("Carol");
    await page.close();
  });
});

describe("Ghost harness", () => {
  let ghost: Ghost;
  beforeAll(async () => {
    ghost = await startGhost();
  });
  afterAll(async () => {
    await ghost?.stop();
  });

  it("the owner set up through the Admin API is reachable through adminApi", async () => {
    const response = await ghost.adminApi("users/me/");
    expect(response.status).toBe(200);
    const { users } = (await response.json()) as { users: { email: string; slug: string }[] };
    expect(users[0]).toMatchObject({ email: ghost.owner.email, slug: ghost.owner.slug });
  });

  it("a new browser signing in as the owner must verify the device, and the emailed code signs it in", async () => {
    const context = await loopbackContext(browser);
    const page = await context.newPage();
    await page.goto(`${ghost.url}/ghost/`);
    await page.getByLabel("Email address").fill(ghost.owner.email);
    await page.getByLabel("Password").fill(ghost.owner.password);
    const signedInAt = new Date();
    await page.getByRole("button", { name: /Sign in/ }).click();
    await expect.poll(() => page.getByRole("heading", { name: "Verify it's really you" }).isVisible(), { timeout: 30_000 }).toBe(true);
    expect(page.url()).toContain("#/signin/verify");

    const code = await ghost.waitForSignInCode({ after: signedInAt });
    expect(code).toMatch(/^\d{6}$/);
    await page.getByLabel("Verification code").fill(code);
    await page.getByRole("button", { name: /Verify/ }).click();
    await page.waitForURL((url) => !url.hash.startsWith("#/signin"), { timeout: 30_000 });
    await expect.poll(() => page.getByText(ghost.owner.email).isVisible(), { timeout: 30_000 }).toBe(true);
    await context.close();
  });
});
