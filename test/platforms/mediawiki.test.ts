import type { Browser, Page } from "playwright";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkOnce } from "../helpers/checks.js";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { clickThrough } from "../helpers/web-app.js";
import { launchChromium } from "./support/browser.js";
import { CAPTCHA_ANSWER, CAPTCHA_QUESTION, CAROL, CAROL_USER_PAGE_TEXT, startMediaWiki, totpCode, type MediaWiki } from "./support/mediawiki.js";

// The MediaWiki driver against a real MediaWiki 1.39 (Debian's package, SQLite, PHP's server), through
// the REST API of a real service with real Chromium. Sign-ins that fail come last: the wiki counts
// them per address, and after three it asks its question on every sign-in from 127.0.0.1.

let wiki: MediaWiki;
let live: LiveService;
let person: Browser;
let serial = 0;

beforeAll(async () => {
  wiki = await startMediaWiki({ captchaBadLoginAttempts: 3 });
  live = await startLiveService({ env: { ACTION_SERVICE_PLATFORMS: `mediawiki=${wiki.url}` } });
  person = await launchChromium();
}, 180_000);
afterAll(async () => {
  await person?.close();
  await live?.close();
  await wiki?.stop();
});

/** A wiki user no other test signs in as (OATHAuth takes each 30-s window's code once per user). */
async function wikiUser(): Promise<{ name: string; password: string }> {
  return wiki.createUser(`Tester${Date.now().toString(36)}${++serial}`, "Tester-Pass-1234");
}

async function addAccount(user: { name: string; password: string }, extra: { totp_secret?: string } = {}): Promise<string> {
  const created = await live.api("POST", "/v1/accounts", { platform: "mediawiki", username: user.name, password: user.password, ...extra });
  expect(created.status).toBe(201);
  return created.json.id;
}

async function succeeded(accountId: string, type: string, params: Record<string, unknown> = {}): Promise<any> {
  const action = await live.run(accountId, type, params);
  const done = action.status === "needs_input" ? action : await live.finished(action.id);
  expect(done, JSON.stringify(done.error ?? done.challenge)).toMatchObject({ status: "succeeded" });
  return done;
}

describe("MediaWiki: sign-in", () => {
  it("is listed with its own params: a post may have a title", async () => {
    const { json } = await live.api("GET", "/v1/platforms");
    const mediawiki = json.data.find((platform: { name: string }) => platform.name === "mediawiki");
    expect(mediawiki.actions.map((action: { type: string }) => action.type).sort()).toEqual(["browser_steps", "connect", "lookup_conversation", "lookup_person", "post", "send_message"]);
    expect(Object.keys(mediawiki.actions.find((action: { type: string }) => action.type === "post").params.properties)).toEqual(["text", "title", "summary"]);
    const refused = await live.api("POST", "/v1/actions", { account_id: await addAccount(await wikiUser()), type: "post", params: { text: "x", title: "a|b" } });
    expect(refused.status).toBe(422);
    expect(refused.json.error.details.issues[0].path).toBe("params.title");
  });

  it("a stored totp_secret signs in without pausing", async () => {
    const user = await wikiUser();
    const secret = await wiki.enableTotp(user.name);
    const accountId = await addAccount(user, { totp_secret: secret });
    const done = await succeeded(accountId, "connect");
    expect(done.result).toMatchObject({ signed_in: true, profile: { handle: user.name } });
    expect(live.history(done.id).map(({ status }) => status)).not.toContain("needs_input");
    const account = await live.api("GET", `/v1/accounts/${accountId}`);
    expect(account.json.status).toBe("connected");
  });

  it("a health check asks the API who is signed in (no page); a session the wiki no longer has is signed in again with the TOTP secret", async () => {
    const user = await wikiUser();
    const secret = await wiki.enableTotp(user.name);
    const accountId = await addAccount(user, { totp_secret: secret });
    await succeeded(accountId, "connect");
    const still = await checkOnce(live, accountId);
    expect(still.account).toMatchObject({ status: "connected" });
    expect(still.pagesOpened).toBe(0);
    expect(still.outcomes).toEqual([{ outcome: "connected" }]);

    // The saved session is gone (no cookies): the API says nobody, so the check opens the start page and signs in.
    const { store } = live.server.service;
    await store.accounts.setSecret(accountId, "session", JSON.stringify({ cookies: [], origins: [] }), new Date().toISOString());
    await live.server.executor.forgetAccount(accountId);
    const again = await checkOnce(live, accountId, 90_000);
    expect(again.account).toMatchObject({ status: "connected" });
    expect(again.pagesOpened).toBe(1);
    expect(again.outcomes).toEqual([{ outcome: "connected" }, { outcome: "signed_in_again" }]);
  });

  it("without a stored secret pauses at two_factor_code, and a real code answers it", async () => {
    const user = await wikiUser();
    const secret = await wiki.enableTotp(user.name);
    const accountId = await addAccount(user);
    const action = await live.run(accountId, "connect");
    expect(action.status).toBe("needs_input");
    expect(action.challenge.kind).toBe("two_factor_code");
    expect(action.challenge.message).toContain("two-factor authentication application");
    const answered = await live.api("POST", `/v1/actions/${action.id}/answer`, { answer: totpCode(secret) });
    expect(answered.status).toBe(202);
    expect(await live.finished(action.id)).toMatchObject({ status: "succeeded", result: { profile: { handle: user.name } } });
  });

  it("a wrong code is refused as the wiki says, and the next real one still signs in", async () => {
    const user = await wikiUser();
    const secret = await wiki.enableTotp(user.name);
    const accountId = await addAccount(user);
    const action = await live.run(accountId, "connect");
    expect(action.challenge.kind).toBe("two_factor_code");
    const wrong = String((Number(totpCode(secret)) + 1) % 1_000_000).padStart(6, "0");
    await live.api("POST", `/v1/actions/${action.id}/answer`, { answer: wrong });
    await live.until(async () => (await live.api("GET", `/v1/actions/${action.id}`)).json.challenge?.message?.includes("Verification failed"), 20_000);
    await live.api("POST", `/v1/actions/${action.id}/answer`, { answer: totpCode(secret) });
    expect((await live.finished(action.id)).status).toBe("succeeded");
  });
});

describe("MediaWiki: actions", () => {
  let dora: { name: string; password: string };
  let doraAccount: string;
  let carolAccount: string;

  beforeAll(async () => {
    dora = await wikiUser();
    doraAccount = await addAccount(dora);
    carolAccount = await addAccount(CAROL);
  });

  it("post makes a real page, with the title given or one under the user's page", async () => {
    const title = `Notes from ${dora.name}`;
    const text = `Hello from the action service, ${Date.now()}.`;
    const done = await succeeded(doraAccount, "post", { text, title, summary: "first post" });
    expect(done.result).toMatchObject({ post_id: title });
    expect((await wiki.pageText(title))?.trim()).toBe(text);
    const revisions = await wiki.api({ action: "query", prop: "revisions", titles: title, rvprop: "user|comment" });
    const revision = (Object.values(revisions.query.pages)[0] as { revisions: { user: string; comment: string }[] }).revisions[0]!;
    expect(revision).toMatchObject({ user: dora.name, comment: "first post" });

    const untitled = await succeeded(doraAccount, "post", { text: "A post without a title." });
    expect(untitled.result.post_id).toMatch(new RegExp(`^User:${dora.name}/\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}$`));
    expect((await wiki.pageText(untitled.result.post_id))?.trim()).toBe("A post without a title.");
  });

  it("a post never overwrites a page that exists", async () => {
    const title = `Taken ${Date.now()}`;
    await wiki.editPage(title, "Already here.");
    const action = await live.run(doraAccount, "post", { text: "Replaced?", title });
    const done = await live.finished(action.id);
    expect(done).toMatchObject({ status: "failed", error: { code: "rejected" } });
    expect((await wiki.pageText(title))?.trim()).toBe("Already here.");
  });

  it("lookup_person reads a real user page and the user's contributions", async () => {
    const done = await succeeded(doraAccount, "lookup_person", { handle: "carol" });
    expect(done.result).toMatchObject({ handle: "Carol", headline: CAROL_USER_PAGE_TEXT, url: `${wiki.url}/index.php/User:Carol` });
    expect(done.result.contributions.map((item: { title: string }) => item.title)).toContain("User:Carol");
    const missing = await live.finished((await live.run(doraAccount, "lookup_person", { handle: "Nobody here" })).id);
    expect(missing).toMatchObject({ status: "failed", error: { code: "not_found" } });
  });

  it("send_message writes on the user's talk page, and that user's lookup_conversation shows it", async () => {
    const text = `Hi Carol, a message at ${Date.now()}.`;
    const sent = await succeeded(doraAccount, "send_message", { to: "Carol", text, subject: "Hello" });
    expect(sent.result).toMatchObject({ conversation_id: "User talk:Carol" });
    const talk = await wiki.pageText("User talk:Carol");
    expect(talk).toContain("== Hello ==");
    expect(talk).toContain(text);
    expect(talk).toContain(`[[User:${dora.name}|`);

    const read = await succeeded(carolAccount, "lookup_conversation", { with: dora.name });
    expect(read.result.messages).toContainEqual(expect.objectContaining({ from: dora.name, subject: "Hello", text, sent_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) }));
    const byPage = await succeeded(carolAccount, "lookup_conversation", { conversation_id: "User talk:Carol" });
    expect(byPage.result.messages.at(-1)).toMatchObject({ from: dora.name, text });
    const nobody = await live.finished((await live.run(doraAccount, "send_message", { to: "Nobody here", text: "hello?" })).id);
    expect(nobody).toMatchObject({ status: "failed", error: { code: "not_found" } });
  });
});

describe("MediaWiki: refusals, in the wiki's words", () => {
  it("a blocked user's post is account_blocked, and nothing is saved", async () => {
    const user = await wikiUser();
    const accountId = await addAccount(user);
    await succeeded(accountId, "connect");
    // The user only: an autoblock would block 127.0.0.1, every other test's address.
    await wiki.maintenance("maintenance/blockUsers.php", ["--reason=testing blocks", "--disable-autoblock"], `${user.name}\n`);
    const title = `Blocked post ${Date.now()}`;
    const done = await live.finished((await live.run(accountId, "post", { text: "Should not land.", title })).id);
    expect(done).toMatchObject({ status: "failed", error: { code: "account_blocked" } });
    expect(await wiki.pageText(title)).toBeUndefined();
  });
});

describe("MediaWiki: failed sign-ins (last: the wiki then asks its question of this address)", () => {
  it("a wrong password is login_failed, in the wiki's words", async () => {
    const user = await wikiUser();
    const accountId = await addAccount({ name: user.name, password: "Not-The-Password-1" });
    const done = await live.finished((await live.run(accountId, "connect")).id);
    expect(done).toMatchObject({ status: "failed", error: { code: "login_failed", message: expect.stringContaining("Incorrect username or password") } });
  });

  it("after failed sign-ins the question pauses the next one as a captcha, answered in the live browser", async () => {
    // Two more wrong passwords: three from this address, and the wiki asks its question from now on.
    for (let attempt = 0; attempt < 2; attempt++) {
      const wrong = await addAccount({ name: (await wikiUser()).name, password: "Not-The-Password-1" });
      expect((await live.finished((await live.run(wrong, "connect")).id)).error.code).toBe("login_failed");
    }
    const user = await wikiUser();
    const accountId = await addAccount(user);
    const action = await live.run(accountId, "connect");
    expect(action.status).toBe("needs_input");
    expect(action.challenge.kind).toBe("captcha");
    expect(action.challenge.message).toContain(CAPTCHA_QUESTION);
    // A captcha is answered on the page, not through the API.
    const refused = await live.api("POST", `/v1/actions/${action.id}/answer`, { answer: CAPTCHA_ANSWER });
    expect(refused.status).toBe(409);

    const view = await openLive(action.challenge.sign_in_url);
    const accountPage = live.server.executor.pages.get(action.id)!;
    // The driver filled in the credentials: the person answers the question and presses "Log in".
    expect(await accountPage.getByLabel("Username").inputValue()).toBe(user.name);
    await clickThrough(view, accountPage, accountPage.locator("input[name='captchaWord']"));
    await view.locator("#screen").press("e");
    for (const key of CAPTCHA_ANSWER.slice(1)) await view.locator("#screen").press(key);
    await expect.poll(() => accountPage.locator("input[name='captchaWord']").inputValue()).toBe(CAPTCHA_ANSWER);
    await clickThrough(view, accountPage, accountPage.getByRole("button", { name: "Log in", exact: true }));
    expect(await live.finished(action.id)).toMatchObject({ status: "succeeded", result: { profile: { handle: user.name } } });
    await view.context().close();
  });
});

async function openLive(url: string): Promise<Page> {
  const context = await person.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(url);
  await page.locator("#screen").waitFor({ state: "visible" });
  return page;
}
