import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { declaredDriver } from "../../src/platforms/declared/index.js";
import { DESKTOP, PHONE, seriousViolations, signedInPage, webAppFixture } from "../helpers/web-app.js";

// Routines in the web app as a person uses them: real Chromium (desktop and phone) against a real
// service, real SQLite and the real sandbox; routines saved through REST (and one version over MCP,
// from a browser_steps action), as agents and programs save them.

const web = webAppFixture(async () => {
  // A second platform (the sandbox's declared driver) for the list's platform filter.
  const file = JSON.parse(await readFile(join(import.meta.dirname, "..", "..", "examples", "drivers", "sandbox.platform.json"), "utf8"));
  return { sandboxDrivers: [declaredDriver(file, "sandbox.platform.json")] };
});

async function postsBy(handle: string): Promise<string[]> {
  return ((await web.live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`)) as { text: string }[]).map((post) => post.text);
}

/** A note posted on the sandbox's home page: its text, then a signature typed as a secret. */
const SIGNED_NOTE = {
  platform: "sandbox",
  name: "signed_note",
  description: "Posts a note with a signature.",
  params: {
    type: "object",
    properties: {
      text: { type: "string", description: "What the note says (letters and spaces).", pattern: "^[A-Za-z ]+$" },
      signature: { type: "string", writeOnly: true, description: "Typed after the text; a secret." },
      urgent: { type: "boolean" },
    },
    required: ["text", "signature"],
  },
  steps: [
    { goto: "/" },
    { fill: { label: "What's on your mind?" }, value: "{{text}} {{signature}}" },
    { click: { role: "button", name: "Post", exact: true } },
    { wait_for: { text: "Your post is live." } },
    { extract_text: { role: "status" }, as: "status" },
  ],
};

describe("routines in the web app", () => {
  let handle: string;
  let accountId: string;
  let taughtFrom: string;

  it("with none saved, the routines page (in the navigation) says how routines are made", async () => {
    const page = await signedInPage(web.person, web.live.url, web.live.key);
    await page.getByRole("link", { name: "Routines" }).click();
    await page.waitForURL(/\/app\/routines$/);
    expect(await page.getByRole("link", { name: "Routines" }).getAttribute("aria-current")).toBe("page");
    const empty = await page.locator("main").innerText();
    expect(empty).toContain("No routines yet");
    expect(empty).toContain("save_routine");
    expect(empty).toContain("POST /v1/routines");
    await page.screenshot({ path: "test-artifacts/web-routines-empty-desktop.png", fullPage: true });
    await page.context().close();
  });

  it("a routine's page shows its versions (the action a version was saved from, linked, and its params) and the latest steps as a person reads them", async () => {
    handle = await web.live.user("none");
    accountId = await web.live.account(handle);
    expect((await web.live.api("POST", "/v1/routines", SIGNED_NOTE)).status).toBe(201);
    // Version 2 saved over MCP from a browser_steps action that succeeded, as an agent saves one.
    const typed = `Taught ${Date.now()}`;
    const taught = await web.live.run(accountId, "browser_steps", {
      // A selector: saved as the run found its element, by role and accessible name.
      steps: [{ goto: "/" }, { fill: `role=textbox[name="What's on your mind?"]`, value: typed }, { click: { role: "button", name: "Post", exact: true } }, { wait_for: { text: "Your post is live." } }],
    });
    expect(taught.status).toBe("succeeded");
    taughtFrom = taught.id;
    const client = new Client({ name: "web-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${web.live.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${web.live.key}` } } }));
    const saved = (await client.callTool({ name: "save_routine", arguments: { platform: "sandbox", name: "post_note", from_action_id: taught.id, params: { text: typed }, description: "Posts a note." } })) as CallToolResult;
    await client.close();
    expect(saved.isError ?? false).toBe(false);
    // Version 2 through REST: the same steps, waiting for the post to show.
    const version2 = await web.live.api("PUT", "/v1/routines/post_note", { params: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }, steps: [...(saved.structuredContent as { steps: unknown[] }).steps, { wait_for: { role: "status" } }] });
    expect(version2.status).toBe(200);

    const page = await signedInPage(web.person, web.live.url, web.live.key);
    await page.goto(`${web.live.url}/app/routines`);
    const rows = page.locator("tbody tr");
    await expect.poll(() => rows.count()).toBe(2);
    const listed = await page.locator("main").innerText();
    expect(listed).toContain("signed_note");
    expect(listed).toContain("Posts a note with a signature.");
    expect(listed).toContain("never run");

    await page.getByRole("link", { name: "post_note" }).click();
    await page.waitForURL(/\/app\/routines\/post_note$/);
    expect(await page.getByRole("heading", { name: "Steps of version 2" }).isVisible()).toBe(true);
    expect(await page.locator("ol.steps li").allInnerTexts()).toEqual([
      "open /",
      'fill textbox "What\'s on your mind?" with {{text}}',
      'click button "Post"',
      'wait for text "Your post is live."',
      "wait for status",
    ]);
    const versions = page.getByRole("table", { name: "Every version, newest first" }).locator("tbody tr");
    expect(await versions.count()).toBe(2);
    expect(await versions.nth(0).innerText()).toContain("its steps, sent as they are");
    expect(await versions.nth(1).getByRole("link", { name: taughtFrom }).getAttribute("href")).toBe(`/app/actions/${taughtFrom}`);
    expect(await versions.nth(1).locator('td[data-label="Params"]').innerText()).toBe("text");

    await page.goto(`${web.live.url}/app/routines/signed_note`);
    expect(await page.locator("ol.steps li").allInnerTexts()).toEqual([
      "open /",
      'fill field labelled "What\'s on your mind?" with {{text}} {{signature}}',
      'click button "Post"',
      'wait for text "Your post is live."',
      "read status as status",
    ]);
    expect(await page.getByRole("table", { name: "Every version, newest first" }).innerText()).toMatch(/signature \(secret\)/);
    await page.screenshot({ path: "test-artifacts/web-routine-desktop.png", fullPage: true });
    await page.context().close();
  }, 90_000);

  it("runs from the form its params schema builds: a refusal shown in the form, then succeeded with the post on the sandbox, and the secret typed in a password input on no page afterwards", async () => {
    const secret = `sig${Date.now().toString(36)}qq`;
    const page = await signedInPage(web.person, web.live.url, web.live.key);
    await page.goto(`${web.live.url}/app/routines/signed_note`);
    const signature = page.getByLabel("Signature");
    expect(await signature.getAttribute("type")).toBe("password");
    expect(await page.getByLabel("Text").getAttribute("required")).not.toBeNull();
    expect(await page.getByLabel("Urgent").getAttribute("type")).toBe("checkbox");
    expect(await page.locator("#param-text-hint").innerText()).toContain("letters and spaces");
    await page.getByLabel("Account").selectOption(accountId);

    // The schema's pattern is checked by the service: the refusal is shown at the field, the secret not sent back.
    await page.getByLabel("Text").fill("Digits 123");
    await signature.fill(secret);
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await expect.poll(() => page.getByRole("alert").first().innerText()).toContain("do not fit the routine");
    expect(await page.locator("#param-text-error").isVisible()).toBe(true);
    expect(await page.getByLabel("Text").inputValue()).toBe("Digits 123");
    expect(await page.getByLabel("Signature").inputValue()).toBe("");
    expect(await page.content()).not.toContain(secret);
    expect(await seriousViolations(page)).toEqual([]);

    const text = `Hello from a routine ${"abcdefghij".charAt(Date.now() % 10)}`;
    await page.getByLabel("Text").fill(text);
    await page.getByLabel("Signature").fill(secret);
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await page.waitForURL(/\/app\/actions\/act_/);
    const actionId = page.url().split("/").pop()!;
    await expect.poll(() => page.locator("h2#state-title .status").innerText(), { timeout: 45_000 }).toBe("succeeded");
    expect(await postsBy(handle)).toContain(`${text} ${secret}`);
    expect((await web.live.api("GET", `/v1/actions/${actionId}`)).json.params).toEqual({ routine: "signed_note", params: { text, signature: "[secret]" }, version: 1 });

    for (const path of [`/app/actions/${actionId}`, "/app/actions", "/app/routines", `/app/accounts/${accountId}`, "/app/routines/signed_note"]) {
      await page.goto(web.live.url + path);
      expect(await page.content(), path).not.toContain(secret);
    }
    // The routine's page lists the run with the version it ran; the list shows it as the last run.
    const runs = page.getByRole("table", { name: "The routine's last runs, newest first" });
    expect(await runs.getByRole("link", { name: actionId }).isVisible()).toBe(true);
    expect(await runs.innerText()).toContain("succeeded");
    await page.goto(`${web.live.url}/app/routines`);
    const row = page.locator("tbody tr", { hasText: "signed_note" });
    expect(await row.getByRole("link", { name: "succeeded" }).getAttribute("href")).toBe(`/app/actions/${actionId}`);
    expect(await page.locator("tbody tr", { hasText: "post_note" }).innerText()).toContain("never run");
    await page.context().close();
  }, 90_000);

  it("the list filters by platform, and says when a platform has none", async () => {
    const page = await signedInPage(web.person, web.live.url, web.live.key);
    await page.goto(`${web.live.url}/app/routines?platform=sandbox-declared`);
    expect(await page.locator("main").innerText()).toContain("No routine for this platform.");
    expect((await web.live.api("POST", "/v1/routines", { platform: "sandbox-declared", name: "open_home", params: { type: "object" }, steps: [{ goto: "/" }] })).status).toBe(201);
    await page.goto(`${web.live.url}/app/routines`);
    await expect.poll(() => page.locator("tbody tr").count()).toBe(3);
    await page.getByLabel("Platform").selectOption("sandbox-declared");
    await page.waitForURL(/platform=sandbox-declared$/);
    expect(await page.locator("tbody tr").allInnerTexts()).toEqual([expect.stringContaining("open_home")]);
    await page.getByLabel("Platform").selectOption("sandbox");
    await page.waitForURL(/platform=sandbox$/);
    expect(await page.locator("tbody tr td:first-child").allInnerTexts()).toEqual(["post_note", "signed_note"]);
    await page.context().close();
  });

  it("a read_only key sees no run form and no delete, and a delete it posts anyway is refused and deletes nothing", async () => {
    const readOnly = await signedInPage(web.person, web.live.url, (await web.live.server.service.engine.keys.issue({ role: "read_only" })).key);
    await readOnly.goto(`${web.live.url}/app/routines/post_note`);
    expect(await readOnly.getByRole("heading", { name: "Steps of version 2" }).isVisible()).toBe(true);
    expect(await readOnly.getByRole("button", { name: "Delete" }).count()).toBe(0);
    expect(await readOnly.getByRole("button", { name: "Run", exact: true }).count()).toBe(0);
    const csrf = await readOnly.locator('meta[name="csrf-token"]').getAttribute("content");
    const forged = await readOnly.request.post(`${web.live.url}/app/routines/post_note/delete`, { form: { _csrf: csrf!, confirm: "yes" }, headers: { origin: web.live.url }, maxRedirects: 0 });
    expect(forged.status()).toBe(403);
    expect((await web.live.api("GET", "/v1/routines/post_note")).status).toBe(200);
    await readOnly.context().close();
  });

  it("delete asks for confirmation, refuses a post from another origin, then the routine is gone and can no longer run", async () => {
    const page = await signedInPage(web.person, web.live.url, web.live.key);
    await page.goto(`${web.live.url}/app/routines/post_note`);
    const csrf = await page.locator('meta[name="csrf-token"]').getAttribute("content");
    const crossSite = await page.request.post(`${web.live.url}/app/routines/post_note/delete`, { form: { _csrf: csrf!, confirm: "yes" }, headers: { origin: web.live.sandbox.url }, maxRedirects: 0 });
    expect(crossSite.status()).toBe(403);
    const unconfirmed = await page.request.post(`${web.live.url}/app/routines/post_note/delete`, { form: { _csrf: csrf! }, headers: { origin: web.live.url }, maxRedirects: 0 });
    expect(unconfirmed.status()).toBe(422);
    expect(await unconfirmed.text()).toContain("Tick the box to confirm");
    expect((await web.live.api("GET", "/v1/routines/post_note")).status).toBe(200);

    await page.getByLabel("Yes, delete post_note").check();
    await page.getByRole("button", { name: "Delete" }).click();
    await page.waitForURL(/\/app\/routines\?done=deleted$/);
    expect(await page.getByRole("status").first().innerText()).toContain("Routine deleted");
    expect(await page.locator("main").innerText()).not.toContain("post_note");
    expect((await web.live.api("GET", "/v1/routines/post_note")).status).toBe(404);
    const run = await web.live.api("POST", "/v1/actions", { account_id: accountId, type: "routine", params: { routine: "post_note", params: { text: "x" } } });
    expect(run.status).toBe(422);
    // The action it was saved from stays readable.
    await page.goto(`${web.live.url}/app/actions/${taughtFrom}`);
    expect(await page.locator("h2#state-title .status").innerText()).toBe("succeeded");
    await page.context().close();
  });

  it("the pages have no serious or critical accessibility violations, on a desktop and on a phone", async () => {
    for (const [name, device] of [["desktop", DESKTOP], ["phone", PHONE]] as const) {
      const page = await signedInPage(web.person, web.live.url, web.live.key, { device });
      for (const [shot, path] of [["routines", "/app/routines"], ["routine", "/app/routines/signed_note"]] as const) {
        await page.goto(web.live.url + path);
        await page.screenshot({ path: `test-artifacts/web-${shot}-${name}.png`, fullPage: true });
        expect(await seriousViolations(page), `${path} on a ${name}`).toEqual([]);
      }
      await page.context().close();
    }
  }, 90_000);
});
