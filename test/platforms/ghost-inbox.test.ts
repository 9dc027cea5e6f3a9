import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { freePort } from "./support/processes.js";
import { startGhost, type Ghost } from "./support/ghost.js";

// The inbox (DESIGN §15) with a real Ghost 6: the site's mail goes straight to the service's SMTP
// listener (a port chosen before either starts) and its owner's e-mail is the account's inbox
// address, so a new device's sign-in code arrives by itself and the service types it. Its own site,
// not ghost.test.ts's: that one mails a catcher, and each site has its own few codes an hour.

let ghost: Ghost;
let live: LiveService;
let accountId: string;

beforeAll(async () => {
  const smtpPort = await freePort();
  ghost = await startGhost({ smtpPort });
  live = await startLiveService({ env: { ACTION_SERVICE_PLATFORMS: `ghost=${ghost.url}`, ACTION_SERVICE_SMTP_PORT: String(smtpPort) } });
  const created = await live.api("POST", "/v1/accounts", { platform: "ghost", username: ghost.owner.email, password: ghost.owner.password });
  expect(created.status).toBe(201);
  accountId = created.json.id;
  // What the owner does: the platform account's e-mail becomes the inbox address, and the service signs in with it.
  const inboxEmail: string = created.json.inbox.email;
  expect(inboxEmail).toMatch(/^[0-9a-f]{32}@inbox\.localhost$/);
  await ghost.setOwnerEmail(inboxEmail);
  expect((await live.api("PATCH", `/v1/accounts/${accountId}`, { username: inboxEmail })).status).toBe(200);
}, 240_000);
afterAll(async () => {
  await live?.close();
  await ghost?.stop();
});

describe("Ghost and the inbox", () => {
  it("a new device's sign-in completes with nobody answering: Ghost mails the code to the inbox and the service types it", async () => {
    const started = Date.now();
    const created = await live.api("POST", "/v1/actions", { account_id: accountId, type: "connect", params: {} });
    expect(created.status).toBe(202);
    const actionId: string = created.json.id;
    const done = await live.finished(actionId, 100_000);
    const tookMs = Date.now() - started;
    expect(done, JSON.stringify(done.error ?? done.challenge)).toMatchObject({
      status: "succeeded",
      answered_by: "inbox",
      result: { signed_in: true, profile: { handle: ghost.owner.email } },
    });
    // It was a new device: Ghost asked for a code, which the inbox answered — as the challenge opened
    // when the mail was already there, else after a pause that lasted only until the mail came.
    expect(await live.server.service.store.challenges.latestOf(actionId)).toMatchObject({ kind: "email_code", answered_by: "inbox" });
    const history = live.history(actionId);
    const paused = history.findIndex(({ status }) => status === "needs_input");
    const waited = paused >= 0 ? `${history[paused + 1]!.at - history[paused]!.at} ms at email_code` : "no pause (the mail was there as the challenge opened)";
    console.info(`Ghost sign-in through the inbox: ${tookMs} ms in all, ${waited}`);

    const messages = await live.api("GET", `/v1/accounts/${accountId}/messages`);
    expect(messages.status).toBe(200);
    expect(messages.json.data).toEqual([expect.objectContaining({ channel: "email", from: expect.stringContaining("noreply@example.com"), used_for: actionId })]);
    expect((await live.api("GET", `/v1/accounts/${accountId}`)).json.status).toBe("connected");
  });
});
