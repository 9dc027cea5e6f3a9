import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLiveService, type LiveService } from "../helpers/live-service.js";

// A real service whose Chromium cannot start, in a workspace with a single free credit:
// the failures that end an action before (or instead of) any page, and cost nothing.
let live: LiveService;

beforeAll(async () => {
  live = await startLiveService({ env: { BROWSER_EXECUTABLE_PATH: "/nonexistent/chromium", ACTION_SERVICE_FREE_CREDITS: "1" } });
});

afterAll(async () => {
  await live?.close();
});

const balance = async () => (await live.api("GET", "/v1/credits")).json.balance as number;

describe("failures decided before any page opens", () => {
  it("fails with browser_unavailable at no cost, and a retry with the same Idempotency-Key runs again", async () => {
    const accountId = await live.account("alice");
    const headers = { "idempotency-key": `no-browser-${Date.now()}` };
    const first = await live.run(accountId, "connect", {}, headers);
    expect(first).toMatchObject({ status: "failed", error: { code: "browser_unavailable" }, cost: 0 });
    // The message names the cause; the next step (REST) says how to retry.
    expect(first.error.message).toContain("no Chromium at /nonexistent/chromium");
    expect(first.next_step).toMatch(/Idempotency-Key/);
    expect(await balance()).toBe(1);

    const retried = await live.api("POST", "/v1/actions?wait=30", { account_id: accountId, type: "connect", params: {} }, { headers });
    expect(retried.headers.get("idempotency-replayed")).toBeNull();
    expect(retried.json.id).not.toBe(first.id);
    expect(retried.json).toMatchObject({ status: "failed", error: { code: "browser_unavailable" }, cost: 0 });
    expect(await balance()).toBe(1);
  });

  it("fails with insufficient_credits at once when the balance is below the price", async () => {
    const accountId = await live.account("alice");
    const created = await live.api("POST", "/v1/actions", { account_id: accountId, type: "post", params: { text: "Costs two" } });
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ status: "failed", error: { code: "insufficient_credits" }, cost: 0 });
    expect(live.history(created.json.id).map((entry) => entry.status)).toEqual(["failed"]);
    expect(await balance()).toBe(1);
  });
});
