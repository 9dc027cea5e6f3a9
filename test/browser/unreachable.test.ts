import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { freePort } from "../helpers/processes.js";

// A service whose platform is not running: the action says which address, and how to start it.
let live: LiveService;

beforeAll(async () => {
  live = await startLiveService({ env: { SANDBOX_URL: `http://127.0.0.1:${await freePort()}` } });
});
afterAll(async () => {
  await live?.close();
});

describe("an unreachable platform", () => {
  it("fails browser_error with the address it could not reach and how to start the sandbox", async () => {
    const account = await live.account("alice");
    const action = await live.run(account, "connect");
    expect(action).toMatchObject({ status: "failed", error: { code: "browser_error" } });
    expect(action.error.message).toContain(`${live.server.executor.baseUrlOf("sandbox")} cannot be reached (ERR_CONNECTION_REFUSED)`);
    expect(action.error.message).toContain("action-service sandbox");
    // Nothing was submitted to a platform that never answered.
    expect(action.error.message).toContain("nothing was done there");
  });
});
