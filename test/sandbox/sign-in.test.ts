import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright";
import { startSandbox, type RunningSandbox } from "../../src/sandbox/index.js";
import {
  ARTIFACTS, control, createUser, heading, latestCode, launchChromium, submitSignIn, totpCode,
} from "./support.js";

const BOB_SECRET = "JBSWY3DPEHPK3PXP";
const WRONG_CODE = "That code didn't work. Check the code and try again.";

let sandbox: RunningSandbox;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  [sandbox, browser] = await Promise.all([startSandbox({ port: 0 }), launchChromium()]);
});
afterAll(async () => {
  await browser?.close();
  await sandbox?.close();
});
beforeEach(async () => {
  context = await browser.newContext();
  page = await context.newPage();
});
afterEach(async () => {
  await context.close();
});

async function fillCode(code: string, options: { remember?: boolean } = {}): Promise<void> {
  await page.getByLabel("Security code").fill(code);
  if (options.remember) await page.getByLabel("Remember this device").check();
  await page.getByRole("button", { name: "Verify" }).click();
}

describe("signing in to the sandbox", () => {
  it("signs alice (no challenge) in and returns to the page she asked for", async () => {
    await page.goto(`${sandbox.url}/people/bob`);
    expect(new URL(page.url()).pathname).toBe("/login");
    await heading(page, "Sign in to Sandbox Social");
    await page.screenshot({ path: `${ARTIFACTS}/sandbox-signin.png` });
    await page.getByLabel("Username").fill("alice");
    await page.getByLabel("Password").fill("sandbox-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await heading(page, "Bob Martinez");
    expect(new URL(page.url()).pathname).toBe("/people/bob");
  });

  it("shows the real messages for an unknown username and a wrong password", async () => {
    await submitSignIn(page, sandbox.url, "nobody_at_all");
    await page.getByText("We couldn't find an account with that username.").waitFor();
    await submitSignIn(page, sandbox.url, "alice", "not-the-password");
    await page.getByText("The password you entered is incorrect.").waitFor();
    expect(await page.getByLabel("Username").inputValue()).toBe("alice");
  });

  it("accepts bob's RFC 6238 code computed from his secret", async () => {
    await submitSignIn(page, sandbox.url, "bob");
    await heading(page, "Two-factor authentication");
    await page.getByText("Enter the 6-digit code from your authenticator app.").waitFor();
    await fillCode(totpCode(BOB_SECRET));
    await heading(page, "Feed");
  });

  it("refuses a TOTP code whose time step was already used, then takes the next step's code", async () => {
    const user = await createUser(sandbox.url, "totp");
    const secret = user.totp_secret ?? "";
    const code = totpCode(secret);
    await submitSignIn(page, sandbox.url, user.handle);
    await fillCode(code);
    await heading(page, "Feed");

    const second = await (await browser.newContext()).newPage();
    await submitSignIn(second, sandbox.url, user.handle);
    await second.getByLabel("Security code").fill(code);
    await second.getByRole("button", { name: "Verify" }).click();
    await second.getByText(WRONG_CODE).waitFor();
    await second.getByLabel("Security code").fill(totpCode(secret, Date.now() + 30_000));
    await second.getByRole("button", { name: "Verify" }).click();
    await heading(second, "Feed");
    await second.context().close();
  });

  it("takes carol's emailed code from the outbox", async () => {
    await submitSignIn(page, sandbox.url, "carol");
    await heading(page, "Check your email");
    await page.getByText("We emailed a code to c***@sandbox.example. Enter it below to finish signing in.").waitFor();
    const outbox = await control(sandbox.url, "GET", "/outbox?to=carol");
    expect(outbox.json[0]).toMatchObject({ channel: "email", to: "carol" });
    expect(outbox.json[0].text).toContain(outbox.json[0].code);
    await fillCode(outbox.json[0].code);
    await heading(page, "Feed");
  });

  it("refuses a wrong texted code for dave, then accepts the right one", async () => {
    await submitSignIn(page, sandbox.url, "dave");
    await heading(page, "Check your phone");
    await page.getByText(/^We texted a code to your phone ending in \d\d\. Enter it below/).waitFor();
    const code = await latestCode(sandbox.url, "dave");
    await fillCode(String((Number(code) + 1) % 1_000_000).padStart(6, "0"));
    await page.getByText(WRONG_CODE).waitFor();
    await fillCode(code);
    await heading(page, "Feed");
  });

  it("signs a magic_link user in by the mailed link, remembering the device ticked on the page", async () => {
    const user = await createUser(sandbox.url, "magic_link");
    await submitSignIn(page, sandbox.url, user.handle);
    await heading(page, "Check your email for a sign-in link");
    expect(await page.getByLabel("Security code").count()).toBe(0);
    // The box is saved as it is ticked: the answer is a link opened later, not a form sent from here.
    const saved = page.waitForResponse((response) => response.request().method() === "POST");
    await page.getByLabel("Remember this device").check();
    expect((await saved).status()).toBe(200);
    const [entry] = (await control(sandbox.url, "GET", `/outbox?to=${user.handle}`)).json;
    await page.goto(entry.link);
    await heading(page, "Feed");
    await page.getByRole("button", { name: "Sign out" }).click();
    await submitSignIn(page, sandbox.url, user.handle);
    await heading(page, "Feed");
  });

  it("moves erin on once her other device approves the sign-in", async () => {
    expect((await control(sandbox.url, "POST", "/devices/approve", { handle: "erin" })).status).toBe(404);
    await submitSignIn(page, sandbox.url, "erin");
    await heading(page, "Check your other device");
    await page.getByRole("button", { name: "I approved it" }).click();
    await page.getByText("We haven't received your approval yet.", { exact: false }).waitFor();
    const approved = await control(sandbox.url, "POST", "/devices/approve", { handle: "erin" });
    expect(approved.status).toBe(200);
    await heading(page, "Feed");
  });

  it("lets frank through the captcha only by clicking the right tiles", async () => {
    await submitSignIn(page, sandbox.url, "frank");
    await heading(page, "Let's make sure you're a person");
    await page.screenshot({ path: `${ARTIFACTS}/sandbox-captcha.png` });
    // A filled-in form field with guessed values does not pass.
    const csrf = await page.locator("input[name=_csrf]").first().inputValue();
    const forged = await context.request.post(`${sandbox.url}/login/challenge`, { form: { _csrf: csrf, tiles: "star,heart,sun" } });
    expect(forged.status()).toBe(422);
    expect(await forged.text()).toContain("Those weren&#39;t the right tiles. Try again.");
    await page.reload();

    const prompt = await page.getByText(/^Select all tiles showing an? /).textContent();
    const word = /showing an? (\w+)/.exec(prompt ?? "")?.[1] ?? "";
    const tiles = await page.getByRole("button", { name: word, exact: true }).all();
    expect(tiles.length).toBeGreaterThanOrEqual(2);
    for (const tile of tiles) await tile.click();
    await page.getByRole("button", { name: "Verify" }).click();
    await heading(page, "Feed");
  });

  it("asks heidi her security question, refuses a wrong answer, and takes the right one typed loosely", async () => {
    await submitSignIn(page, sandbox.url, "heidi");
    await heading(page, "Answer your security question");
    expect((await page.getByRole("main").getByRole("paragraph").first().innerText()).trim()).toBe("What was the name of your first pet?");
    await page.screenshot({ path: `${ARTIFACTS}/sandbox-question.png` });
    await page.getByLabel("Your answer").fill("rover");
    await page.getByRole("button", { name: "Verify" }).click();
    await page.getByRole("alert").filter({ hasText: "That answer doesn't match our records." }).waitFor();
    await heading(page, "Answer your security question");
    await page.getByLabel("Your answer").fill("  BISCUIT ");
    await page.getByLabel("Remember this device").check();
    await page.getByRole("button", { name: "Verify" }).click();
    await heading(page, "Feed");

    // The device is remembered: the next sign-in skips the question.
    await control(sandbox.url, "POST", "/users/heidi/sessions/expire");
    await submitSignIn(page, sandbox.url, "heidi");
    await heading(page, "Feed");
  });

  it("asks a user created with her own question, in the redesign's words", async () => {
    const user = await createUser(sandbox.url, "question", { security_question: "In which town were you born?", security_answer: "Tromsø" });
    expect(user).toMatchObject({ challenge: "question", security_question: "In which town were you born?" });
    await control(sandbox.url, "POST", "/settings", { redesign: true });
    try {
      await page.goto(`${sandbox.url}/account/signin`);
      await page.getByLabel("Email or username").fill(user.handle);
      await page.getByLabel("Passcode").fill("sandbox-password");
      await page.getByRole("button", { name: "Continue" }).click();
      await heading(page, "Answer your security question");
      await page.getByText("In which town were you born?", { exact: true }).waitFor();
      expect(await page.getByLabel("Your answer").count()).toBe(0);
      expect(await page.getByLabel("Trust this browser").count()).toBe(1);
      await page.getByLabel("Security answer").fill("tromsø");
      await page.getByRole("button", { name: "Confirm" }).click();
      await heading(page, "Home");
    } finally {
      await control(sandbox.url, "POST", "/settings", { redesign: false });
    }
  });

  it("keeps grace at the restricted-account page whatever she does", async () => {
    await submitSignIn(page, sandbox.url, "grace");
    await heading(page, "Your account has been restricted");
    await page.getByText("We restricted your account.", { exact: false }).waitFor();
    expect(await page.getByLabel("Security code").count()).toBe(0);
    await page.goto(`${sandbox.url}/feed`);
    await heading(page, "Sign in to Sandbox Social");
  });

  it("remembers the device across sign-out and session expiry, but still asks for the password", async () => {
    const user = await createUser(sandbox.url, "email");
    await submitSignIn(page, sandbox.url, user.handle);
    await fillCode(await latestCode(sandbox.url, user.handle), { remember: true });
    await heading(page, "Feed");

    const expired = await control(sandbox.url, "POST", `/users/${user.handle}/sessions/expire`);
    expect(expired.json).toEqual({ handle: user.handle, expired: 1 });
    await page.goto(`${sandbox.url}/messages`);
    await heading(page, "Sign in to Sandbox Social");
    await page.getByText("Your session has ended. Sign in again.").waitFor();
    expect(new URL(page.url()).search).toBe("?next=%2Fmessages");
    await page.getByLabel("Username").fill(user.handle);
    await page.getByLabel("Password").fill("sandbox-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await heading(page, "Messages");
    expect((await control(sandbox.url, "GET", `/outbox?to=${user.handle}`)).json).toHaveLength(1);

    // Another browser without the device cookie gets the challenge again.
    const other = await (await browser.newContext()).newPage();
    await submitSignIn(other, sandbox.url, user.handle);
    await heading(other, "Check your email");
    await other.context().close();
  });
});
