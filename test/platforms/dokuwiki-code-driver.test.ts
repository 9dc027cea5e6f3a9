import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, restClient, startServe, type ServeProcess } from "../helpers/processes.js";
import { eventually } from "../helpers/wait.js";
import { BOB, CAROL, READ_ONLY_NAMESPACE, startDokuWiki, type DokuWiki } from "./support/dokuwiki.js";

// A code driver package kept outside the service, as a user writes one: examples/drivers/dokuwiki-journal,
// loaded by a real `serve` process (dist/cli.js: `npm run build` first) through ACTION_SERVICE_DRIVERS,
// as a path relative to the working directory, on DokuWiki (Debian's package, PHP's server) in real
// Chromium. What each action did is read back from the wiki itself, never from the service.

const ROOT = join(import.meta.dirname, "..", "..");
const DRIVER = "examples/drivers/dokuwiki-journal";
const PLATFORM = "dokuwiki-journal";

let wiki: DokuWiki;
let service: ServeProcess;
let dataDir: string;
let api: ReturnType<typeof restClient>;

beforeAll(async () => {
  wiki = await startDokuWiki();
  dataDir = mkdtempSync(join(tmpdir(), "action-service-dokuwiki-code-"));
  service = await startServe({
    dataDir,
    // No sandbox runs here: the wiki is the platform under test.
    sandboxUrl: "http://127.0.0.1:9",
    env: { ACTION_SERVICE_DRIVERS: DRIVER, ACTION_SERVICE_PLATFORMS: `${PLATFORM}=${wiki.url}` },
  });
  api = restClient(() => service.url, service.firstKey!);
}, 180_000);
afterAll(async () => {
  await service?.stop();
  await wiki?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function addAccount(username: string, password: string): Promise<string> {
  const created = await api("POST", "/v1/accounts", { platform: PLATFORM, username, password });
  expect(created.status, JSON.stringify(created.json)).toBe(201);
  return created.json.id;
}

/** Runs an action through REST and waits until it ends (or pauses, which no DokuWiki sign-in should). */
async function run(accountId: string, type: string, params: Record<string, unknown> = {}): Promise<any> {
  const created = await api("POST", "/v1/actions", { account_id: accountId, type, params });
  expect(created.status, JSON.stringify(created.json)).toBeLessThan(300);
  return eventually(
    async () => {
      const action = (await api("GET", `/v1/actions/${created.json.id}?wait=10`)).json;
      return ["succeeded", "failed", "canceled", "needs_input"].includes(action.status) ? action : undefined;
    },
    { what: `the ${type} to end`, timeoutMs: 100_000, everyMs: 200 },
  );
}

async function succeeded(accountId: string, type: string, params: Record<string, unknown> = {}): Promise<any> {
  const action = await run(accountId, type, params);
  expect(action.status, JSON.stringify(action.error ?? action.challenge)).toBe("succeeded");
  return action;
}

async function failed(accountId: string, type: string, params: Record<string, unknown> = {}): Promise<{ code: string; message: string }> {
  const action = await run(accountId, type, params);
  expect(action.status, JSON.stringify(action.result ?? action.challenge)).toBe("failed");
  return action.error;
}

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
    const passed = await driverCheck(BOB.password);
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

/** What `driver check --json` prints. */
interface CheckReport { ok: boolean; checks: { name: string; outcome: string; message: string }[] }

/** `action-service driver check examples/drivers/dokuwiki-journal --url … --username bob --json`, from the repository's root, the password from the environment. */
function driverCheck(password: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, "driver", "check", DRIVER, "--url", wiki.url, "--username", BOB.name, "--json"], {
      cwd: ROOT,
      env: { ...process.env, ACTION_SERVICE_CHECK_PASSWORD: password, ACTION_SERVICE_LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}
