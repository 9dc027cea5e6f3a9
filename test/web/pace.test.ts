import { afterEach, describe, expect, it } from "vitest";
import type { Harness } from "../helpers/harness.js";
import { SCRIPTED_PLATFORM, eventually } from "../helpers/scripted-executor.js";
import { WebClient, webHarness } from "./support.js";

// The web app's pace (DESIGN §16): the account page shows it and changes it, the run form says
// when an action would start.

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.destroy();
  harness = undefined;
});

describe("pace in the web app", () => {
  it("the account page shows and changes the pace; the run form says 'Runs now', then when a paced action would run", async () => {
    const h = (harness = await webHarness({ engine: { random: () => 0.5, platforms: [{ ...SCRIPTED_PLATFORM, paces: { post: { per_hour: 600 } } }] } }));
    const accountId = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "carol", password: "pw-123456" } })).json.id;
    const client = new WebClient(h.app);
    await client.signIn(h.adminKey);
    const accountPage = `/app/accounts/${accountId}`;
    const runForm = `/app/actions/new?account_id=${accountId}&type=post`;

    expect((await client.send("GET", accountPage)).text).toContain("<dt>Post</dt><dd>600 posts an hour</dd>");
    expect((await client.send("GET", runForm)).text).toContain("Runs now");

    const saved = await client.send("POST", `${accountPage}/pace`, { form: { _csrf: await client.csrf(accountPage), type: "post", per_hour: "1", per_day: "", min_gap_seconds: "" } });
    expect(saved.status).toBe(303);
    expect((await client.send("GET", accountPage)).text).toContain("<dt>Post</dt><dd>1 post an hour (changed for this account)</dd>");

    const posted = (await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text: "hello" } } })).json;
    await eventually(async () => (await h.request("GET", `/v1/actions/${posted.id}`)).json.status === "succeeded");
    expect((await client.send("GET", runForm)).text).toContain("Paced: 1 post an hour on this account; would run at 13:00 UTC. It waits queued until then.");

    // An empty field restores the platform's default.
    await client.send("POST", `${accountPage}/pace`, { form: { _csrf: await client.csrf(accountPage), type: "post", per_hour: "", per_day: "", min_gap_seconds: "" } });
    expect((await client.send("GET", accountPage)).text).toContain("<dt>Post</dt><dd>600 posts an hour</dd>");
    expect((await client.send("GET", runForm)).text).toContain("Runs now");
  });
});
