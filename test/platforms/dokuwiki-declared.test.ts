import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../helpers/wait.js";
import { BOB, CAROL, READ_ONLY_NAMESPACE, startDokuWiki, type DokuWiki } from "./support/dokuwiki.js";
import { driverCheck, servePlatform, type CheckReport, type PlatformService } from "./support/service.js";

// A platform no built-in driver covers, DokuWiki (Debian's package, PHP's server), driven only by
// the declared file a user would write: examples/drivers/dokuwiki.platform.json, loaded by a real
// `serve` process (dist/cli.js: `npm run build` first) through ACTION_SERVICE_DRIVERS, with real
// Chromium. What each action did is read back from the wiki itself, never from the service.

const PLATFORM_FILE = join(import.meta.dirname, "..", "..", "examples", "drivers", "dokuwiki.platform.json");

let wiki: DokuWiki;
let platform: PlatformService;
let api: PlatformService["api"];
let addAccount: PlatformService["addAccount"];
let succeeded: PlatformService["succeeded"];
let failed: PlatformService["failed"];

beforeAll(async () => {
  wiki = await startDokuWiki();
  platform = await servePlatform({ drivers: PLATFORM_FILE, platform: "dokuwiki", url: wiki.url });
  ({ api, addAccount, succeeded, failed } = platform);
}, 180_000);
afterAll(async () => {
  await platform?.stop();
  await wiki?.stop();
});

/** A page id no other test uses. */
let pages = 0;
const newPage = (namespace = "notes") => `${namespace}:from-the-service-${Date.now().toString(36)}-${++pages}`;

describe("DokuWiki, declared: loaded from its file", () => {
  it("is listed as a platform, with the params its file adds to a post", async () => {
    const { json } = await api("GET", "/v1/platforms");
    const dokuwiki = json.data.find((platform: { name: string }) => platform.name === "dokuwiki");
    expect(dokuwiki, JSON.stringify(json.data.map((platform: { name: string }) => platform.name))).toBeDefined();
    expect(dokuwiki.actions.map((action: { type: string }) => action.type).sort()).toEqual(["browser_steps", "connect", "lookup_person", "post"]);
    const post = dokuwiki.actions.find((action: { type: string }) => action.type === "post");
    expect(Object.keys(post.params.properties).sort()).toEqual(["page", "summary", "text"]);
    // The file's pattern for a page id is the service's validation: a bad id creates no action.
    const refused = await api("POST", "/v1/actions", { account_id: await addAccount(BOB.name, BOB.password), type: "post", params: { text: "x", page: "Not A Page Id" } });
    expect(refused.status).toBe(422);
  });
});

describe("DokuWiki, declared: sign-in", () => {
  it("a wrong password is login_failed, in the wiki's words", async () => {
    const accountId = await addAccount(BOB.name, "not-the-password");
    const error = await failed(accountId, "connect");
    expect(error.code).toBe("login_failed");
    expect(error.message).toContain("Sorry, username or password was wrong.");
    expect(error.message).not.toContain("not-the-password");
  });

  it("the right password connects, and the account is the user the wiki says is signed in", async () => {
    const accountId = await addAccount(BOB.name, BOB.password);
    const done = await succeeded(accountId, "connect");
    expect(done.result).toMatchObject({ signed_in: true, profile: { handle: BOB.name } });
    expect((await api("GET", `/v1/accounts/${accountId}`)).json.status).toBe("connected");
  });
});

describe("DokuWiki, declared: health checks", () => {
  it("a check finds the session alive on the wiki; once the password is changed on the wiki, the check finds it refused (needs_auth)", async () => {
    const dora = await wiki.createUser(`dora${Date.now().toString(36)}`, "Dora-Pass-1234", "Dora Explorer");
    const accountId = await addAccount(dora.name, dora.password);
    await succeeded(accountId, "connect");
    const checked = async (): Promise<any> => {
      const before = (await api("GET", `/v1/accounts/${accountId}`)).json.checked_at as string | undefined;
      expect((await api("POST", `/v1/accounts/${accountId}/check`)).status).toBe(202);
      return eventually(
        async () => {
          const account = (await api("GET", `/v1/accounts/${accountId}`)).json;
          return account.checked_at && account.checked_at !== before ? account : undefined;
        },
        { what: "the check to be done", timeoutMs: 60_000, everyMs: 250 },
      );
    };
    expect(await checked()).toMatchObject({ status: "connected" });

    // As the wiki's user manager does for an admin's change: the cookie's old password now signs in nobody.
    await wiki.setPassword(dora.name, "Changed-By-The-Admin-1");
    const refused = await checked();
    expect(refused.status).toBe("needs_auth");
    expect(refused.status_reason).toContain("Sorry, username or password was wrong.");
  });
});

describe("DokuWiki, declared: actions", () => {
  let bob: string;
  beforeAll(async () => {
    bob = await addAccount(BOB.name, BOB.password);
    await succeeded(bob, "connect");
  });

  it("a post makes a real page as the account, read back from the wiki's raw export; a second post to it is refused and changes nothing", async () => {
    const page = newPage();
    const text = `Hello from the action service, ${new Date().toISOString()}.\n\n  * a list item with **bold** text`;
    const done = await succeeded(bob, "post", { text, page, summary: "first post" });
    expect(done.result.post_id).toBe(page);
    expect(new URL(done.result.url).searchParams.get("id")).toBe(page);
    expect((await wiki.pageText(page))?.trim()).toBe(text);
    expect(wiki.lastChange(page)).toEqual({ user: BOB.name, summary: "first post" });

    const again = await failed(bob, "post", { text: "an overwrite", page });
    expect(again).toMatchObject({ code: "rejected", message: expect.stringContaining("exists already") });
    expect((await wiki.pageText(page))?.trim()).toBe(text);
  });

  it("looks up a person's user page for real; a user with none is not_found", async () => {
    const done = await succeeded(bob, "lookup_person", { handle: CAROL.name });
    expect(done.result).toMatchObject({
      handle: CAROL.name,
      name: CAROL.fullName,
      about: "Hi, I am Carol. I look after the garden pages.",
      updated_by: CAROL.name,
      url: `${wiki.url}/doku.php?id=user:${CAROL.name}`,
    });
    expect(done.result.updated_at).toMatch(/^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}$/);

    const byUrl = await succeeded(bob, "lookup_person", { url: `${wiki.url}/doku.php?id=user:${CAROL.name}` });
    expect(byUrl.result).toMatchObject({ handle: CAROL.name, name: CAROL.fullName });

    expect(await failed(bob, "lookup_person", { handle: "nobody-here" })).toMatchObject({ code: "not_found" });
  });

  it("a page another user has open in the editor is rejected in the wiki's words, and nothing is saved", async () => {
    const page = newPage();
    await wiki.lockPage(page, CAROL.name);
    const error = await failed(bob, "post", { text: "written while Carol edits", page });
    expect(error.code).toBe("rejected");
    expect(error.message).toContain("locked for editing by another user");
    expect(await wiki.pageText(page)).toBeUndefined();
  });

  it("text the wiki's blocklist matches is rejected in its words, and nothing is saved", async () => {
    const page = newPage();
    const error = await failed(bob, "post", { text: "Cheap wow gold, today only.", page });
    expect(error.code).toBe("rejected");
    expect(error.message).toContain("blocked text (spam)");
    expect(await wiki.pageText(page)).toBeUndefined();
  });

  it("a namespace the account may only read is rejected before anything is typed", async () => {
    const page = newPage(READ_ONLY_NAMESPACE);
    const error = await failed(bob, "post", { text: "not allowed here", page });
    expect(error.code).toBe("rejected");
    expect(error.message).toContain("read here but not create pages");
    expect(await wiki.pageText(page)).toBeUndefined();
  });
});

describe("DokuWiki, declared: driver check", () => {
  it("finds every page state the file declares on the live wiki, signed in as Bob; a wrong password fails it as login_failed", async () => {
    const passed = await driverCheck({ driver: PLATFORM_FILE, url: wiki.url, username: BOB.name, password: BOB.password });
    expect(passed.code, passed.stdout + passed.stderr).toBe(0);
    const report = JSON.parse(passed.stdout) as CheckReport;
    expect(report.ok).toBe(true);
    const outcome = (name: string) => report.checks.find((check) => check.name === name)?.outcome;
    for (const state of ["signedOut", "signedIn", "form.username", "form.password", "form.submit", "form.remember", "signedInAs", "probe"]) {
      expect(outcome(state), state).toBe("found");
    }
    expect(report.checks.filter((check) => check.name.startsWith("failures[")).map((check) => check.outcome)).toEqual(Array(5).fill("not_shown"));
    expect(passed.stdout + passed.stderr).not.toContain(BOB.password);

    const refused = await driverCheck({ driver: PLATFORM_FILE, url: wiki.url, username: BOB.name, password: "not-the-password" });
    expect(refused.code, refused.stdout + refused.stderr).toBe(1);
    const refusedReport = JSON.parse(refused.stdout) as CheckReport;
    expect(refusedReport.ok).toBe(false);
    expect(refusedReport.checks.find((check) => check.name === "refused")?.outcome).toBe("found");
    expect(refusedReport.checks.find((check) => check.name === "sign-in")?.message).toContain("login_failed");
    expect(refused.stdout + refused.stderr).not.toContain("not-the-password");
  });
});
