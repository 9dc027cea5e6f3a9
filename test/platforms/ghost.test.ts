import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkOnce } from "../helpers/checks.js";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { startGhost, type Ghost } from "./support/ghost.js";

// The Ghost driver against a real Ghost 6 (npm, SQLite, its own Node 22, mail to a local catcher),
// through the REST API of a real service with real Chromium. Ghost allows few sign-in codes an hour:
// the suite signs in once and every later action rides on the saved session, as the driver should.

let ghost: Ghost;
let live: LiveService;
let accountId: string;

beforeAll(async () => {
  ghost = await startGhost();
  live = await startLiveService({ env: { ACTION_SERVICE_PLATFORMS: `ghost=${ghost.url}` } });
  const created = await live.api("POST", "/v1/accounts", { platform: "ghost", username: ghost.owner.email, password: ghost.owner.password });
  expect(created.status).toBe(201);
  accountId = created.json.id;
}, 240_000);
afterAll(async () => {
  await live?.close();
  await ghost?.stop();
});

describe("Ghost", () => {
  it("a new device pauses at email_code, and the code Ghost mailed answers it", async () => {
    const asked = new Date();
    const action = await live.run(accountId, "connect");
    expect(action.status, JSON.stringify(action.error)).toBe("needs_input");
    expect(action.challenge).toMatchObject({ kind: "email_code", message: expect.stringContaining("signing in from a new device") });
    const code = await ghost.waitForSignInCode({ after: asked });
    expect(code).toMatch(/^\d{6}$/);
    expect((await live.api("POST", `/v1/actions/${action.id}/answer`, { answer: code })).status).toBe(202);
    expect(await live.finished(action.id, 90_000)).toMatchObject({ status: "succeeded", result: { signed_in: true, profile: { handle: ghost.owner.email } } });
    expect((await live.api("GET", `/v1/accounts/${accountId}`)).json.status).toBe("connected");
  });

  it("post publishes on the site, on the saved session (no second code)", async () => {
    const mailsBefore = ghost.mails().length;
    const title = `From the action service ${Date.now()}`;
    const action = await live.run(accountId, "post", { title, text: "First paragraph.\nSecond paragraph." });
    const done = action.status === "needs_input" ? action : await live.finished(action.id, 90_000);
    expect(done, JSON.stringify(done.error ?? done.challenge)).toMatchObject({ status: "succeeded", result: { post_id: expect.stringMatching(/^[0-9a-f]{24}$/), title } });
    expect(live.history(done.id).map(({ status }) => status)).not.toContain("needs_input");
    expect(ghost.mails().length).toBe(mailsBefore);
    // The public page, as a reader gets it.
    const publicPage = await fetch(done.result.url);
    expect(publicPage.status).toBe(200);
    const html = await publicPage.text();
    expect(html).toContain(title);
    expect(html).toContain("First paragraph.");
    expect(html).toContain("Second paragraph.");
    const admin = await (await ghost.adminApi(`posts/${done.result.post_id}/`)).json();
    expect(admin.posts[0]).toMatchObject({ status: "published", title });
  });

  it("a health check asks the Admin API who is signed in: connected, without a page or a mail", async () => {
    const mailsBefore = ghost.mails().length;
    const seen = await checkOnce(live, accountId, 90_000);
    expect(seen.account).toMatchObject({ status: "connected" });
    expect(seen.pagesOpened).toBe(0);
    expect(seen.outcomes).toEqual([{ outcome: "connected" }]);
    expect(ghost.mails().length).toBe(mailsBefore);
  });

  it("lookup_person reads the author page, with the posts on it", async () => {
    const done = await live.finished((await live.run(accountId, "lookup_person", { handle: ghost.owner.slug })).id, 60_000);
    expect(done, JSON.stringify(done.error)).toMatchObject({ status: "succeeded", result: { handle: ghost.owner.slug, name: ghost.owner.name, url: `${ghost.url}/author/${ghost.owner.slug}/` } });
    expect(done.result.posts.map((item: { title: string }) => item.title)).toEqual(expect.arrayContaining([expect.stringMatching(/^From the action service/)]));
    const missing = await live.finished((await live.run(accountId, "lookup_person", { handle: "nobody-here" })).id, 60_000);
    expect(missing).toMatchObject({ status: "failed", error: { code: "not_found" } });
  });
});
