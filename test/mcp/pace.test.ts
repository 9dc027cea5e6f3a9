import { describe, expect, it } from "vitest";
import { SCRIPTED_PLATFORM, ScriptedExecutor, eventually } from "../helpers/scripted-executor.js";
import { addAccount, call, connect, harness } from "./support.js";

describe("pace over MCP", () => {
  it("update_account takes pace; a post past it stays queued with not_before and a next_step naming update_account", async () => {
    const h = await harness({ executor: new ScriptedExecutor(), engine: { random: () => 0, platforms: [{ ...SCRIPTED_PLATFORM, paces: { post: { per_hour: 600 } } }] } });
    const client = await connect(h);
    const accountId = await addAccount(h);

    const updated = await call(client, "update_account", { account_id: accountId, pace: { post: { per_hour: 1, min_gap_seconds: 60 } } });
    expect(updated.isError).toBeFalsy();
    expect(updated.data.pace).toEqual({ post: { per_hour: 1, min_gap_seconds: 60 } });
    expect(updated.text).toContain("Pace: 1 post an hour, 60 s between posts.");
    const refused = await call(client, "update_account", { account_id: accountId, pace: { post: { per_hour: -2 } } });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain("pace.post.per_hour");
    expect((await h.store.accounts.get(accountId))!.pace).toEqual({ post: { per_hour: 1, min_gap_seconds: 60 } });

    const first = await call(client, "run_action", { account_id: accountId, type: "post", params: { text: "one" }, wait_seconds: 5 });
    expect(first.data.status).toBe("succeeded");
    const second = await call(client, "run_action", { account_id: accountId, type: "post", params: { text: "two" }, wait_seconds: 0 });
    const waiting = await eventually(async () => {
      const read = await call(client, "get_action", { action_id: second.data.id, wait_seconds: 0 });
      return read.data.not_before ? read : undefined;
    });
    expect(waiting.data).toMatchObject({ status: "queued", not_before: "2026-11-21T13:00:00.000Z" });
    expect(waiting.data.next_step).toBe(`Paced: 1 post an hour, 60 s between posts on this account; runs at 13:00 UTC. To change the pace: update_account (account_id "${accountId}", pace {"post": {…}}).`);
  });
});
