import { type Page } from "playwright";
import { expect, it } from "vitest";
import { signedInPage, webAppFixture } from "../helpers/web-app.js";

// "Run it again" on a failed action's page, as a person uses it: real Chromium against a real
// service, real SQLite and the real sandbox. A failed routine (or browser_steps) action's secrets
// were never kept: the form asks for each again (an empty, required password field), so "[secret]"
// is never sent as a value, and what is typed there is what the new run types.
const web = webAppFixture();

async function postsBy(handle: string): Promise<string[]> {
  return ((await web.live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`)) as { text: string }[]).map((post) => post.text);
}

/** Posts `{{text}} {{signature}}`, then waits for words the sandbox never shows: the post is made, the action fails. */
const FAILING_STEPS = [
  { goto: "/" },
  { fill: { label: "What's on your mind?" }, value: "{{text}} {{signature}}" },
  { click: { role: "button", name: "Post", exact: true } },
  { wait_for: { text: "Words the sandbox never shows" }, timeout_ms: 1_000 },
];

/** Clicks "Run it again" with `secret` typed in the field named `label`, and waits for the new action to end. */
async function runAgain(page: Page, label: string, secret: string): Promise<any> {
  const form = page.getByRole("form", { name: "Run it again" });
  const field = form.getByLabel(label);
  expect(await field.getAttribute("type")).toBe("password");
  expect(await field.getAttribute("required")).not.toBeNull();
  expect(await field.inputValue()).toBe("");
  const before = page.url();
  // Left empty, the browser keeps the form: nothing is sent.
  await form.getByRole("button", { name: "Run it again" }).click();
  expect(await field.evaluate((input: HTMLInputElement) => input.validity.valueMissing)).toBe(true);
  expect(page.url()).toBe(before);
  await field.fill(secret);
  await form.getByRole("button", { name: "Run it again" }).click();
  await page.waitForURL((url) => /\/app\/actions\/act_/.test(url.pathname) && url.href !== before);
  const ended = await web.live.finished(page.url().split("/").pop()!);
  // The page follows its action until it ends: once it shows the end, it navigates no more.
  await expect.poll(() => page.locator("h2#state-title .status").innerText(), { timeout: 30_000 }).toBe(ended.status);
  return ended;
}

it("a failed routine's and a failed browser_steps action's secrets are asked for again, never resent as [secret]", async () => {
  const handle = await web.live.user("none");
  const accountId = await web.live.account(handle);
  const saved = await web.live.api("POST", "/v1/routines", {
    platform: "sandbox",
    name: "signed_then_lost",
    params: { type: "object", properties: { text: { type: "string" }, signature: { type: "string", writeOnly: true } }, required: ["text", "signature"] },
    steps: FAILING_STEPS,
  });
  expect(saved.status).toBe(201);
  const failed = await web.live.run(accountId, "routine", { routine: "signed_then_lost", params: { text: "First", signature: "sig-one" } });
  expect(failed).toMatchObject({ status: "failed", error: { code: "ui_changed" }, params: { params: { signature: "[secret]" } } });

  const page = await signedInPage(web.person, web.live.url, web.live.key);
  await page.goto(`${web.live.url}/app/actions/${failed.id}`);
  expect(await page.locator("#again-secrets-note").innerText()).toContain("secret values were never kept");
  await page.screenshot({ path: "test-artifacts/web-run-again-secret.png", fullPage: true });
  const again = await runAgain(page, "Signature", "sig-two");
  expect(again).toMatchObject({ status: "failed", type: "routine", params: { routine: "signed_then_lost", params: { text: "First", signature: "[secret]" } } });
  expect(await postsBy(handle)).toEqual(expect.arrayContaining(["First sig-one", "First sig-two"]));

  // The same for a fill marked secret in browser_steps: asked for by the step it was typed at.
  const steps = [{ goto: "/" }, { fill: { label: "What's on your mind?" }, value: "steps-one", secret: true }, ...FAILING_STEPS.slice(2)];
  const failedSteps = await web.live.run(accountId, "browser_steps", { steps });
  expect(failedSteps.status).toBe("failed");
  expect(failedSteps.params.steps[1]).toMatchObject({ value: "[secret]", secret: true });
  await page.goto(`${web.live.url}/app/actions/${failedSteps.id}`);
  const againSteps = await runAgain(page, "Secret typed at step 2", "steps-two");
  expect(againSteps).toMatchObject({ status: "failed", type: "browser_steps" });
  expect(againSteps.params.steps).toEqual(failedSteps.params.steps);
  const posts = await postsBy(handle);
  expect(posts).toEqual(expect.arrayContaining(["steps-one", "steps-two"]));
  expect(posts.join("\n")).not.toContain("[secret]");
  // A form sent without the secret anyway (its `required` taken off) is refused by the service: no action is made.
  const before = (await web.live.api("GET", `/v1/actions?account_id=${accountId}&limit=100`)).json.data.length;
  await page.goto(`${web.live.url}/app/actions/${failed.id}`);
  const form = page.getByRole("form", { name: "Run it again" });
  await form.getByLabel("Signature").evaluate((input: HTMLInputElement) => input.removeAttribute("required"));
  await form.getByRole("button", { name: "Run it again" }).click();
  await expect.poll(() => page.getByRole("alert").first().innerText()).toContain("Its secret values were never kept: type Signature again");
  expect((await web.live.api("GET", `/v1/actions?account_id=${accountId}&limit=100`)).json.data.length).toBe(before);
  for (const id of [again.id, againSteps.id]) {
    await page.goto(`${web.live.url}/app/actions/${id}`);
    expect(await page.content()).not.toMatch(/sig-two|steps-two/);
  }
  await page.context().close();
}, 120_000);

it("a failed action without secrets runs again at one click, its params as they were", async () => {
  const handle = await web.live.user("none");
  const accountId = await web.live.account(handle);
  const failed = await web.live.run(accountId, "browser_steps", { steps: [{ goto: "/" }, ...FAILING_STEPS.slice(3)] });
  expect(failed.status).toBe("failed");
  const page = await signedInPage(web.person, web.live.url, web.live.key);
  await page.goto(`${web.live.url}/app/actions/${failed.id}`);
  const form = page.getByRole("form", { name: "Run it again" });
  expect(await form.locator("input[type=password]").count()).toBe(0);
  await form.getByRole("button", { name: "Run it again" }).click();
  await page.waitForURL((url) => /\/app\/actions\/act_/.test(url.pathname) && !url.pathname.endsWith(failed.id));
  const again = await web.live.finished(page.url().split("/").pop()!);
  await expect.poll(() => page.locator("h2#state-title .status").innerText(), { timeout: 30_000 }).toBe(again.status);
  expect(again.params).toEqual(failed.params);
  await page.context().close();
}, 120_000);
