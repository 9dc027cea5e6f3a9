import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLiveService, type LiveService } from "../helpers/live-service.js";

let live: LiveService;

beforeAll(async () => {
  live = await startLiveService({ env: { ACTION_SERVICE_MAX_CONCURRENT_ACTIONS: "2" } });
});
afterAll(async () => {
  await live?.close();
});

describe("run slots", () => {
  it("count only browser work: with 2 slots and 4 actions waiting for codes, another account's post still runs at once", async () => {
    const waiting = [];
    for (let i = 0; i < 4; i++) {
      const account = await live.account(await live.user("email"));
      waiting.push((await live.api("POST", "/v1/actions", { account_id: account, type: "connect", params: {} })).json.id as string);
    }
    for (const id of waiting) expect((await live.wait(id)).status).toBe("needs_input");
    // Each paused action keeps its page (its code is typed into it) but no slot.
    expect(live.server.service.engine.core.runner.pausedCount).toBe(4);

    const handle = await live.user("none");
    const account = await live.account(handle);
    const started = Date.now();
    const post = await live.run(account, "post", { text: `while four wait ${handle}` });
    expect(post.status).toBe("succeeded");
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(live.history(post.id).map((entry) => entry.status)).toEqual(["queued", "running", "succeeded"]);
    for (const id of waiting) expect((await live.api("GET", `/v1/actions/${id}`)).json.status).toBe("needs_input");
    for (const id of waiting) await live.api("POST", `/v1/actions/${id}/cancel`);
  });

  it("a queued action says what it waits for", async () => {
    const handle = await live.user("email");
    const account = await live.account(handle);
    const paused = (await live.api("POST", "/v1/actions?wait=30", { account_id: account, type: "connect", params: {} })).json;
    expect((await live.wait(paused.id)).status).toBe("needs_input");
    const queued = (await live.api("POST", "/v1/actions", { account_id: account, type: "post", params: { text: "later" } })).json;
    expect(queued).toMatchObject({ status: "queued", next_step: expect.stringContaining(`Waits behind ${paused.id}`) });
    await live.api("POST", `/v1/actions/${paused.id}/cancel`);
    await live.api("POST", `/v1/actions/${queued.id}/cancel`);
  });
});
