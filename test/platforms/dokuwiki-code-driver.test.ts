import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOB, CAROL, READ_ONLY_NAMESPACE, startDokuWiki, type DokuWiki } from "./support/dokuwiki.js";
import { driverCheck, servePlatform, type CheckReport, type PlatformService } from "./support/service.js";

// A code driver package kept outside the service, as a user writes one: examples/drivers/dokuwiki-journal,
// loaded by a real `serve` process (dist/cli.js: `npm run build` first) through ACTION_SERVICE_DRIVERS,
// as a path relative to the working directory, on DokuWiki (Debian's package, PHP's server) in real
// Chromium. What each action did is read back from the wiki itself, never from the service.

const ROOT = join(import.meta.dirname, "..", "..");
const DRIVER = "examples/drivers/dokuwiki-journal";
const PLATFORM = "dokuwiki-journal";

let wiki: DokuWiki;
let platform: PlatformService;
let api: PlatformService["api"];
let addAccount: PlatformService["addAccount"];
let succeeded: PlatformService["succeeded"];
let failed: PlatformService["failed"];

beforeAll(async () => {
  wiki = await startDokuWiki();
  platform = await servePlatform({ drivers: DRIVER, platform: PLATFORM, url: wiki.url });
  ({ api, addAccount, succeeded, failed } = platform);
}, 180_000);
afterAll(async () => {
  await platform?.stop();
  await wiki?.stop();
});

/** A word no other test's text starts with, so each test's page ids are its own. */
let words = 0;
const unique = () => `w${Date.now().toString(36)}${++words}`;
/** The journal page ids a post of lower-case ASCII words may get today (and tomorrow, should the test cross midnight UTC). */
const journalIds = (slug: string, namespace = "journal"): string[] => {
  const now = new Date();
  const soon = new Date(now.getTime() + 5 * 60_000);
  return [...new Set([now, soon].map((day) => `${namespace}:${day.toISOString().slice(0, 10)}-${slug}`))];
};

describe("DokuWiki, a code driver package: loaded from outside the source tree", () => {
  it("is listed as a platform, with the params its code declares for a post (no page id)", async () => {
    const { json } = await api("GET", "/v1/platforms");
    const platform = json.data.find((entry: { name: string }) => entry.name === PLATFORM);
    expect(platform, JSON.stringify(json.data.map((entry: { name: string }) => entry.name))).toBeDefined();
    expect(platform.actions.map((action: { type: string }) => action.type).sort()).toEqual(["browser_steps", "connect", "lookup_person", "post"]);
    const post = platform.actions.find((action: { type: string }) => action.type === "post");
    expect(Object.keys(post.params.properties).sort()).toEqual(["namespace", "summary", "text"]);
  });
});

describe("DokuWiki, a code driver package: sign-in", () => {
  it("a wrong password is login_failed, in the wiki's words", async () => {
    const error = await failed(await addAccount(BOB.name, "not-the-password"), "connect");
    expect(error.code).toBe("login_failed");
    expect(error.message).toContain("Sorry, username or password was wrong.");
    expect(error.message).not.toContain("not-the-password");
  });

  it("the right password connects, with the login and real name the wiki shows", async () => {
    const accountId = await addAccount(BOB.name, BOB.password);
    const done = await succeeded(accountId, "connect");
    expect(done.result).toEqual({ signed_in: true, profile: { handle: BOB.name, name: BOB.fullName } });
    expect((await api("GET", `/v1/accounts/${accountId}`)).json.status).toBe("connected");
  });
});

describe("DokuWiki, a code driver package: actions", () => {
  let bob: string;
  beforeAll(async () => {
    bob = await addAccount(BOB.name, BOB.password);
    await succeeded(bob, "connect");
  });

  it("a post with no page name is written to a journal page named from the date and its first words; the same words again get a page of their own", async () => {
    const word = unique();
    const text = `${word} Hello, World! From the journal driver.\n\n  * written ${new Date().toISOString()}`;
    const first = await succeeded(bob, "post", { text, summary: "a journal entry" });
    const slug = `${word}-hello-world-from-the`;
    expect(journalIds(slug)).toContain(first.result.post_id);
    expect(first.result.url).toBe(`${wiki.url}/doku.php?id=${first.result.post_id}`);
    expect((await wiki.pageText(first.result.post_id))?.trim()).toBe(text.trim());
    expect(wiki.lastChange(first.result.post_id)).toEqual({ user: BOB.name, summary: "a journal entry" });

    const again = `${word} hello world from the journal driver, once more.`;
    const second = await succeeded(bob, "post", { text: again });
    expect(second.result.post_id).toBe(`${first.result.post_id}-2`);
    expect((await wiki.pageText(second.result.post_id))?.trim()).toBe(again);
    // The first page is untouched.
    expect((await wiki.pageText(first.result.post_id))?.trim()).toBe(text.trim());
  });

  it("a page id another user holds in the editor is rejected with who holds it and until when, in the wiki's words; nothing is saved", async () => {
    const word = unique();
    const ids = journalIds(`${word}-locked-words`);
    for (const id of ids) await wiki.lockPage(id, CAROL.name);
    const error = await failed(bob, "post", { text: `${word} locked words` });
    expect(error.code).toBe("rejected");
    expect(error.message).toContain("This page is currently locked for editing by another user.");
    expect(error.message).toMatch(new RegExp(`Currently locked by: ${CAROL.name}\\b`));
    expect(error.message).toMatch(/Lock expires at: \d{4}\/\d{2}\/\d{2} \d{2}:\d{2} \(\d+ min\)/);
    for (const id of ids) expect(await wiki.pageText(id)).toBeUndefined();
  });

  it("a namespace the account may only read is rejected in the wiki's words; nothing is saved", async () => {
    const word = unique();
    const error = await failed(bob, "post", { text: `${word} not allowed here`, namespace: READ_ONLY_NAMESPACE });
    expect(error.code).toBe("rejected");
    expect(error.message).toContain("Sorry, you don't have enough rights to continue.");
    for (const id of journalIds(`${word}-not-allowed-here`, READ_ONLY_NAMESPACE)) expect(await wiki.pageText(id)).toBeUndefined();
  });

  it("looks up a person's user page for real, by handle and by its address; a user with none is not_found", async () => {
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

    expect(await failed(bob, "lookup_person", { handle: "nobody-here" })).toMatchObject({ code: "not_found", message: expect.stringContaining("user:nobody-here") });
  });
});

describe("DokuWiki, a code driver package: driver check", () => {
  it("finds every page state the package declares on the live wiki, signed in as Bob", async () => {
    const passed = await driverCheck({ driver: DRIVER, url: wiki.url, username: BOB.name, password: BOB.password, cwd: ROOT });
    expect(passed.code, passed.stdout + passed.stderr).toBe(0);
    const report = JSON.parse(passed.stdout) as CheckReport;
    expect(report.ok).toBe(true);
    const outcome = (name: string) => report.checks.find((check) => check.name === name)?.outcome;
    for (const state of ["signedOut", "signedIn", "form.username", "form.password", "form.submit", "form.remember", "signedInAs", "probe"]) {
      expect(outcome(state), state).toBe("found");
    }
    expect(report.checks.filter((check) => check.name.startsWith("failures[")).map((check) => check.outcome)).toEqual(Array(2).fill("not_shown"));
    expect(passed.stdout + passed.stderr).not.toContain(BOB.password);
  });
});
