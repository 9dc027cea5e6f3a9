import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright";
import { startSandbox, type RunningSandbox } from "../../src/sandbox/index.js";
import { ARTIFACTS, PASSWORD, control, createUser, heading, launchChromium, signInOverHttp } from "./support.js";

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

async function post(text: string): Promise<void> {
  await page.goto(`${sandbox.url}/feed`);
  await page.getByLabel("What's on your mind?").fill(text);
  await page.getByRole("button", { name: "Post", exact: true }).click();
}

describe("the sandbox site, driven like a person", () => {
  it("publishes a post on its permalink, and refuses a duplicate, an empty and an over-long one", async () => {
    const user = await createUser(sandbox.url, "none");
    await signInOverHttp(context, sandbox.url, user.handle);
    const text = `Hello from ${user.handle} <b>not bold</b>`;
    await post(text);
    await heading(page, `Post by ${user.name}`);
    await page.getByText("Your post is live.").waitFor();
    const id = /^\/posts\/([a-z0-9]+)$/.exec(new URL(page.url()).pathname)?.[1];
    expect(await page.locator(".post .text").textContent()).toBe(text);
    const stored = await control(sandbox.url, "GET", `/posts?author=${user.handle}`);
    expect(stored.json).toEqual([{ id, author: user.handle, text, created_at: expect.any(String) }]);

    await page.goto(`${sandbox.url}/feed`);
    await page.getByRole("link", { name: user.name }).first().waitFor();
    await page.screenshot({ path: `${ARTIFACTS}/sandbox-feed.png` });
    await post(text);
    await page.getByText("You already posted this.").waitFor();
    await post("   ");
    await page.getByText("Your post is empty. Write something first.").waitFor();
    await post("x".repeat(501));
    await page.getByText("Your post is too long. Posts can be up to 500 characters.").waitFor();
    expect((await control(sandbox.url, "GET", `/posts?author=${user.handle}`)).json).toHaveLength(1);
  });

  it("shows a person's name, handle and headline, and a not-found page for an unknown handle", async () => {
    await signInOverHttp(context, sandbox.url, "alice");
    await page.goto(`${sandbox.url}/people/bob`);
    await heading(page, "Bob Martinez");
    const profile = page.getByRole("region", { name: "Profile" });
    await profile.getByText("@bob", { exact: true }).waitFor();
    await profile.getByText("Backend engineer · coffee, queues and long bike rides").waitFor();
    const missing = await page.goto(`${sandbox.url}/people/no_such_person`);
    expect(missing?.status()).toBe(404);
    await heading(page, "This page isn't available");
  });

  it("reads a seeded conversation and starts a new one from a person page", async () => {
    await signInOverHttp(context, sandbox.url, "alice");
    await page.goto(`${sandbox.url}/messages`);
    await heading(page, "Messages");
    await page.getByRole("link", { name: "Bob Martinez" }).click();
    await heading(page, "Conversation with Bob Martinez");
    const messages = page.getByRole("list", { name: "Messages" }).getByRole("listitem");
    expect(await messages.count()).toBe(3);
    await messages.nth(1).getByText("Sure, send them over. I'm free after lunch.").waitFor();
    expect(await messages.nth(1).locator("time").getAttribute("datetime")).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);

    const user = await createUser(sandbox.url, "none");
    await signInOverHttp(context, sandbox.url, user.handle);
    await page.goto(`${sandbox.url}/people/carol`);
    await page.getByRole("link", { name: "Message", exact: true }).click();
    await heading(page, "New message");
    await page.getByLabel("Write a message").fill("Hi Carol, is the meetup open to newcomers?");
    await page.getByRole("button", { name: "Send" }).click();
    await heading(page, "Conversation with Carol Nguyen");
    await page.getByText("Hi Carol, is the meetup open to newcomers?").waitFor();
    const conversationUrl = new URL(page.url());
    expect(conversationUrl.hash).toMatch(/^#message-[a-z0-9]+$/);
    await page.getByLabel("Write a message").fill("See you Thursday!");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByText("See you Thursday!").waitFor();
    await page.goto(`${sandbox.url}/messages/new?to=carol`);
    expect(new URL(page.url()).pathname).toBe(conversationUrl.pathname);

    await page.goto(`${sandbox.url}/messages/new?to=nobody_here`);
    await page.getByText("We couldn't find anyone with that username.").waitFor();
    const unknown = await page.goto(`${sandbox.url}/messages/zzzzzzzzzzzz`);
    expect(unknown?.status()).toBe(404);
    await heading(page, "This page isn't available");
  });

  it("shows an account without direct messages 'Messaging isn't available' on every messages page, uncounted", async () => {
    await signInOverHttp(context, sandbox.url, "ivan");
    await control(sandbox.url, "POST", "/settings", { rate_limit: { max: 1, window_seconds: 600 } });
    try {
      for (const path of ["/messages", "/messages/new?to=alice", "/messages/new", "/messages/zzzzzzzzzzzz"]) {
        const response = await page.goto(`${sandbox.url}${path}`);
        expect(response?.status(), path).toBe(403);
        await heading(page, "Messaging isn't available");
        await page.getByText("Direct messages aren't available for your account.").waitFor();
        expect(await page.getByLabel("Write a message").count()).toBe(0);
      }
      await page.screenshot({ path: `${ARTIFACTS}/sandbox-messaging-off.png` });
      const csrf = await page.locator("input[name=_csrf]").first().inputValue();
      const sent = await context.request.post(`${sandbox.url}/messages/new`, { form: { _csrf: csrf, to: "alice", text: "Hello?" }, maxRedirects: 0 });
      expect(sent.status()).toBe(403);
      expect(await sent.text()).toContain("Messaging isn&#39;t available");
      // None of those counted: the one action the window allows is still there.
      expect((await page.goto(`${sandbox.url}/people/alice`))?.status()).toBe(200);

      await control(sandbox.url, "POST", "/settings", { redesign: true });
      expect((await page.goto(`${sandbox.url}/inbox`))?.status()).toBe(403);
      await heading(page, "Messaging isn't available");
    } finally {
      await control(sandbox.url, "POST", "/settings", { redesign: false, rate_limit: { max: 1000, window_seconds: 60 } });
    }
  });

  it("shows the slow-down page once a user does too much in the window", async () => {
    const user = await createUser(sandbox.url, "none");
    await signInOverHttp(context, sandbox.url, user.handle);
    expect((await control(sandbox.url, "POST", "/settings", { rate_limit: { max: 3, window_seconds: 60 } })).json)
      .toEqual({ redesign: false, rate_limit: { max: 3, window_seconds: 60 }, response_delay_ms: 0, profile_reworded: false });
    try {
      for (const handle of ["alice", "bob", "carol"]) {
        expect((await page.goto(`${sandbox.url}/people/${handle}`))?.status()).toBe(200);
      }
      const limited = await page.goto(`${sandbox.url}/people/dave`);
      expect(limited?.status()).toBe(429);
      expect(limited?.headers()["retry-after"]).toMatch(/^\d+$/);
      await page.getByText("You're doing that too much. Try again later.").waitFor();
      await post("one post too many");
      await page.getByText("You're doing that too much. Try again later.").waitFor();
      expect((await control(sandbox.url, "GET", `/posts?author=${user.handle}`)).json).toHaveLength(0);
    } finally {
      await control(sandbox.url, "POST", "/settings", { rate_limit: { max: 1000, window_seconds: 60 } });
    }
  });

  it("after the redesign, the old labels and routes no longer work and the new ones do", async () => {
    const user = await createUser(sandbox.url, "none");
    await signInOverHttp(context, sandbox.url, "alice");
    await control(sandbox.url, "POST", "/settings", { redesign: true });
    try {
      await page.goto(`${sandbox.url}/feed`);
      expect(new URL(page.url()).pathname).toBe("/home");
      expect(await page.getByLabel("What's on your mind?").count()).toBe(0);
      expect(await page.getByLabel("Share an update").count()).toBe(1);
      await page.goto(`${sandbox.url}/people/bob`);
      expect(new URL(page.url()).pathname).toBe("/home");

      const fresh = await (await browser.newContext()).newPage();
      await fresh.goto(`${sandbox.url}/login`);
      expect(new URL(fresh.url()).pathname).toBe("/account/signin");
      expect(await fresh.getByLabel("Username", { exact: true }).count()).toBe(0);
      await fresh.getByLabel("Email or username").fill(`${user.handle}@sandbox.example`);
      await fresh.getByLabel("Passcode").fill(PASSWORD);
      await fresh.getByRole("button", { name: "Continue" }).click();
      await heading(fresh, "Home");
      await fresh.screenshot({ path: `${ARTIFACTS}/sandbox-redesign.png` });
      await fresh.getByLabel("Share an update").fill("Trying the new look");
      await fresh.getByRole("button", { name: "Publish" }).click();
      await heading(fresh, `Update from ${user.name}`);
      expect(new URL(fresh.url()).pathname).toMatch(/^\/p\/[a-z0-9]+$/);
      await fresh.goto(`${sandbox.url}/u/bob`);
      await heading(fresh, "Bob Martinez");
      await fresh.goto(`${sandbox.url}/inbox/new?to=carol`);
      await heading(fresh, "New conversation");
      await fresh.context().close();
    } finally {
      await control(sandbox.url, "POST", "/settings", { redesign: false });
    }
    await page.goto(`${sandbox.url}/home`);
    expect(new URL(page.url()).pathname).toBe("/feed");
  });
});
