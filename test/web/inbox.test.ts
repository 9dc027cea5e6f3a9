import { AxeBuilder } from "@axe-core/playwright";
import { writeFileSync } from "node:fs";
import { type Page } from "playwright";
import { describe, expect, it } from "vitest";
import { PHONE, signedInPage, webAppFixture } from "../helpers/web-app.js";

// The account page's inbox (DESIGN §15) in real Chromium against a real service whose SMTP
// listener the sandbox mails its codes to.

const web = webAppFixture({ inbox: true });

/**
 * Every accessibility violation axe finds: serious or critical ones on the whole page, any at all
 * in the inbox. The page has no frames, so axe runs in the page itself (`axe.run`, its "legacy"
 * mode): its frame-by-frame run would finish in a blank page opened for each scan, twice the
 * scan's time for the same result.
 */
async function violations(page: Page): Promise<string[]> {
  expect(page.frames(), `${page.url()} has frames: scan it frame by frame (leave out setLegacyMode)`).toHaveLength(1);
  const describe = (found: { id: string; nodes: { target: unknown[] }[] }[]): string[] => found.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(" ")).join(", ")}`);
  const whole = await new AxeBuilder({ page }).setLegacyMode(true).analyze();
  const inbox = await new AxeBuilder({ page }).setLegacyMode(true).include('section[aria-labelledby="inbox-title"]').analyze();
  return [...describe(whole.violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical")), ...describe(inbox.violations)];
}

/** Clicks a copy button and returns what the clipboard then holds. */
async function copied(page: Page, button: string): Promise<string> {
  await page.evaluate(() => navigator.clipboard.writeText(""));
  await page.getByRole("button", { name: button }).click();
  await expect.poll(() => page.getByRole("button", { name: "Copied" }).count()).toBeGreaterThan(0);
  return page.evaluate(() => navigator.clipboard.readText());
}

describe("the account page's inbox", () => {
  it("shows the address and SMS URL with working copy buttons, the messages and what each answered, and replaces both", async () => {
    const { accountId, handle, inbox } = await web.live.inboxUser("email");
    const created = await web.live.api("POST", "/v1/actions", { account_id: accountId, type: "connect", params: {} });
    expect(await web.live.finished(created.json.id, 60_000)).toMatchObject({ status: "succeeded", answered_by: "inbox" });
    const code = await web.live.latestCode(handle);
    const unused = `Nothing to see here ${handle}`;
    expect((await web.live.api("POST", `/v1/accounts/${accountId}/messages`, { channel: "sms", text: unused })).status).toBe(202);

    const page = await signedInPage(web.person, web.live.url, web.live.key, { clipboard: true });
    await page.goto(`${web.live.url}/app/accounts/${accountId}`);
    expect(await page.getByLabel("E-mail address").inputValue()).toBe(inbox.email);
    expect(await page.getByLabel("SMS URL").inputValue()).toBe(inbox.sms_url);
    expect(await copied(page, "Copy the address")).toBe(inbox.email);
    await page.reload();
    expect(await copied(page, "Copy the SMS URL")).toBe(inbox.sms_url);

    const rows = page.locator('section[aria-labelledby="inbox-title"] tbody tr');
    await expect.poll(() => rows.count()).toBe(2);
    // Newest first: the pushed text (unused: nothing found in it), then the mail that answered the connect.
    expect(await rows.nth(0).locator('td[data-label="Channel"]').innerText()).toBe("text (pushed)");
    expect(await rows.nth(0).locator('td[data-label="Used for"]').innerText()).toBe("unused: no code or link found");
    expect(await rows.nth(1).locator('td[data-label="Channel"]').innerText()).toBe("e-mail (mailed)");
    expect(await rows.nth(1).locator('td[data-label="From"]').innerText()).toMatch(/@/);
    expect(await rows.nth(1).locator('td[data-label="Used for"]').innerText()).toBe("Connect succeeded");
    await rows.nth(1).getByRole("link", { name: "Connect" }).click();
    await page.waitForURL(new RegExp(`/app/actions/${created.json.id}$`));
    await page.goBack();

    // Never the message text, nor its code.
    const shown = await page.content();
    expect(shown).not.toContain(code);
    expect(shown).not.toContain(unused);
    // One capture, kept in both places.
    writeFileSync("/tmp/web-inbox-admin-desktop.png", await page.screenshot({ path: "test-artifacts/web-inbox-admin-desktop.png", fullPage: true }));
    expect(await violations(page)).toEqual([]);

    // Replacing asks first (the button is behind a disclosure), then the old ones stop working.
    expect(await page.getByRole("button", { name: "Replace address and SMS URL" }).isVisible()).toBe(false);
    await page.getByText("Replace address and SMS URL…").click();
    await page.locator('section[aria-labelledby="inbox-title"]').screenshot({ path: "/tmp/web-inbox-replace-open.png" });
    expect(await violations(page)).toEqual([]);
    await page.getByRole("button", { name: "Replace address and SMS URL" }).click();
    await page.waitForURL(/done=rotated/);
    await expect.poll(() => page.getByRole("status").first().innerText()).toContain("Inbox address and SMS URL replaced");
    const now = (await web.live.api("GET", `/v1/accounts/${accountId}`)).json.inbox as { email: string; sms_url: string };
    expect(now.email).not.toBe(inbox.email);
    expect(now.sms_url).not.toBe(inbox.sms_url);
    expect(await page.getByLabel("E-mail address").inputValue()).toBe(now.email);
    expect(await page.getByLabel("SMS URL").inputValue()).toBe(now.sms_url);
    expect(await copied(page, "Copy the SMS URL")).toBe(now.sms_url);
    expect((await fetch(inbox.sms_url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ text: "code 123456" }) })).status).toBe(404);
    await page.context().close();

    const phone = await signedInPage(web.person, web.live.url, web.live.key, { device: PHONE, clipboard: true });
    await phone.goto(`${web.live.url}/app/accounts/${accountId}`);
    await phone.screenshot({ path: "/tmp/web-inbox-admin-phone.png", fullPage: true });
    expect(await violations(phone)).toEqual([]);
    await phone.context().close();
  }, 120_000);

  it("an operator key sees the address and SMS URL, but neither the messages nor the replace button", async () => {
    const { accountId, inbox } = await web.live.inboxUser("sms");
    expect((await web.live.api("POST", `/v1/accounts/${accountId}/messages`, { channel: "sms", text: "Your code is 918273" })).status).toBe(202);
    const operator = await web.live.server.service.engine.keys.issue({ role: "operator" });
    const page = await signedInPage(web.person, web.live.url, operator.key, { clipboard: true });
    await page.goto(`${web.live.url}/app/accounts/${accountId}`);
    expect(await page.getByLabel("E-mail address").inputValue()).toBe(inbox.email);
    expect(await page.getByLabel("SMS URL").inputValue()).toBe(inbox.sms_url);
    expect(await copied(page, "Copy the SMS URL")).toBe(inbox.sms_url);
    expect(await page.getByRole("heading", { name: "Recent messages" }).count()).toBe(0);
    expect(await page.getByText("Replace address and SMS URL").count()).toBe(0);
    expect(await page.content()).not.toContain("918273");
    await page.screenshot({ path: "/tmp/web-inbox-operator-desktop.png", fullPage: true });
    expect(await violations(page)).toEqual([]);
    // A forged replace from the operator's own session is refused and changes nothing.
    const csrf = await page.locator('meta[name="csrf-token"]').getAttribute("content");
    const forged = await page.request.post(`${web.live.url}/app/accounts/${accountId}/inbox/rotate`, { form: { _csrf: csrf! }, headers: { origin: web.live.url }, maxRedirects: 0 });
    expect(forged.status()).toBe(403);
    expect((await web.live.api("GET", `/v1/accounts/${accountId}`)).json.inbox).toEqual(inbox);
    await page.context().close();

    const readOnly = await signedInPage(web.person, web.live.url, (await web.live.server.service.engine.keys.issue({ role: "read_only" })).key, { clipboard: true });
    await readOnly.goto(`${web.live.url}/app/accounts/${accountId}`);
    expect(await readOnly.getByRole("heading", { name: "Inbox" }).count()).toBe(0);
    expect(await readOnly.content()).not.toContain(inbox.sms_url);
    await readOnly.context().close();
  }, 60_000);
});
