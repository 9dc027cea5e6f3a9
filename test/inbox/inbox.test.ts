import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLiveService, type LiveService } from "../helpers/live-service.js";

// The inbox (DESIGN §15) end to end: the service's SMTP listener on 127.0.0.1, the sandbox mailing
// and texting its codes like a platform, real Chromium signing in; nobody answers.
let live: LiveService;

beforeAll(async () => {
  live = await startLiveService({ inbox: true });
}, 60_000);

afterAll(async () => {
  await live?.close();
});

/** The action's `action.updated` events, oldest first. */
async function updates(actionId: string): Promise<{ status: string; answered_by?: string }[]> {
  const response = await live.api("GET", "/v1/events?limit=200");
  return (response.json.data as { type: string; data: { id: string; status: string; answered_by?: string } }[])
    .filter((event) => event.type === "action.updated" && event.data.id === actionId)
    .map((event) => event.data)
    .reverse();
}

describe("codes that arrive by themselves", () => {
  it("an e-mailed code: connect succeeds with nobody answering, answered_by inbox", async () => {
    const { accountId } = await live.inboxUser("email");
    const created = await live.api("POST", "/v1/actions", { account_id: accountId, type: "connect", params: {} });
    const ended = await live.finished(created.json.id, 60_000);
    expect(ended).toMatchObject({ status: "succeeded", answered_by: "inbox" });
  }, 90_000);
});
