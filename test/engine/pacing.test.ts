import { afterEach, describe, expect, it } from "vitest";
import { ActionFailure } from "../../src/domain/errors.js";
import { FakeClock } from "../helpers/clock.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { SCRIPTED_PLATFORM, ScriptedExecutor, eventually } from "../helpers/scripted-executor.js";

// Pacing per account (DESIGN §16) on a real store (SQLite, or PostgreSQL under test:postgres) with
// the engine's fake clock. The jitter's source is pinned at 0.5: a wait gets 10 % added.
const MINUTE = 60_000;

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.destroy();
  harness = undefined;
});

async function setup(executor = new ScriptedExecutor()): Promise<{ h: Harness; alice: string; bob: string }> {
  const h = (harness = await createHarness({
    executor,
    engine: { random: () => 0.5, platforms: [{ ...SCRIPTED_PLATFORM, paces: { post: { per_hour: 600 } } }] },
  }));
  const account = async (username: string) => (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username, password: "pw-123456" } })).json.id as string;
  return { h, alice: await account("alice"), bob: await account("bob") };
}

async function post(h: Harness, accountId: string, text: string): Promise<string> {
  const created = await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text } } });
  expect(created.status).toBe(202);
  return created.json.id;
}

const statusOf = async (h: Harness, id: string) => (await h.request("GET", `/v1/actions/${id}`)).json;
const ended = (h: Harness, id: string) => eventually(async () => ["succeeded", "failed"].includes((await statusOf(h, id)).status) && statusOf(h, id));
const deferred = (h: Harness, id: string) => eventually(async () => ((await statusOf(h, id)).not_before ? statusOf(h, id) : false));

describe("pacing", () => {
  it("with 2 posts an hour, of 3 posts at once two run and the third waits queued with not_before and a next_step saying so, never failed; other accounts run meanwhile", async () => {
    const { h, alice, bob } = await setup();
    const t0 = h.clock.now().getTime();
    expect((await h.request("PATCH", `/v1/accounts/${alice}`, { body: { pace: { post: { per_hour: 2 } } } })).json.pace).toEqual({ post: { per_hour: 2 } });
    const [first, second, third] = [await post(h, alice, "one"), await post(h, alice, "two"), await post(h, alice, "three")];
    expect((await ended(h, first)).status).toBe("succeeded");
    expect((await ended(h, second)).status).toBe("succeeded");
    const waiting = await deferred(h, third);
    // A rolling hour from the first start, plus 10 % of that wait as jitter.
    expect(waiting).toMatchObject({ status: "queued", not_before: new Date(t0 + 66 * MINUTE).toISOString() });

    h.clock.advance(30 * MINUTE);
    h.engine.core.runner.pump();
    const bobs = await post(h, bob, "meanwhile");
    expect((await ended(h, bobs)).status).toBe("succeeded");
    const later = await statusOf(h, third);
    expect(later).toMatchObject({ status: "queued", not_before: waiting.not_before });
    expect(later.next_step).toBe(
      `Paced: 2 posts an hour on this account; runs at 13:06 UTC. To change the pace: PATCH /v1/accounts/${alice} {"pace": {"post": {…}}}.`,
    );

    h.clock.advance(36 * MINUTE);
    h.engine.core.runner.pump();
    expect(await ended(h, third)).toMatchObject({ status: "succeeded" });
    expect((await statusOf(h, third)).not_before).toBeUndefined();
  });

  it("a rate_limited failure cools the account's later posts down 15 min, doubling per strike; a success ends it; a wait the platform named is used", async () => {
    const executor = new ScriptedExecutor()
      .on("slow down", async () => {
        throw new ActionFailure("rate_limited");
      })
      .on("retry in 2 min", async () => {
        throw new ActionFailure("rate_limited", undefined, 120);
      });
    const { h, alice, bob } = await setup(executor);
    const t0 = h.clock.now().getTime();
    expect(await ended(h, await post(h, alice, "slow down"))).toMatchObject({ status: "failed", error: { code: "rate_limited" } });
    const next = await post(h, alice, "slow down");
    expect(await deferred(h, next)).toMatchObject({ status: "queued", not_before: new Date(t0 + 15 * MINUTE).toISOString() });
    expect((await statusOf(h, next)).next_step).toMatch(/^Cooling down: the platform asked this account to slow down \(rate_limited\).*runs at 12:15 UTC/);
    expect((await ended(h, await post(h, bob, "other account"))).status).toBe("succeeded");

    // Its second strike in a row waits twice as long.
    h.clock.advance(15 * MINUTE);
    h.engine.core.runner.pump();
    expect(await ended(h, next)).toMatchObject({ status: "failed", error: { code: "rate_limited" } });
    const third = await post(h, alice, "fine");
    expect(await deferred(h, third)).toMatchObject({ status: "queued", not_before: new Date(t0 + 45 * MINUTE).toISOString() });

    // A success of the type ends the cool-down: the next post runs at once.
    h.clock.advance(30 * MINUTE);
    h.engine.core.runner.pump();
    expect((await ended(h, third)).status).toBe("succeeded");
    expect(await h.store.paceCooldowns.get(alice, "post")).toBeUndefined();
    expect((await ended(h, await post(h, alice, "again"))).status).toBe("succeeded");

    // The platform's own wait, when the driver read one.
    expect((await ended(h, await post(h, alice, "retry in 2 min"))).status).toBe("failed");
    const named = await post(h, alice, "after the named wait");
    expect(await deferred(h, named)).toMatchObject({ not_before: new Date(h.clock.now().getTime() + 2 * MINUTE).toISOString() });
  });

  it("PATCH pace overrides the platform's default field by field, null restores it; bad input is refused and changes nothing", async () => {
    const { h, alice } = await setup();
    const path = `/v1/accounts/${alice}`;
    expect((await h.request("GET", path)).json.pace).toEqual({ post: { per_hour: 600 } });
    expect((await h.request("PATCH", path, { body: { pace: { post: { per_hour: 2, min_gap_seconds: 5 } } } })).json.pace).toEqual({ post: { per_hour: 2, min_gap_seconds: 5 } });
    expect((await h.request("PATCH", path, { body: { pace: { post: { per_day: 10 }, send_message: { min_gap_seconds: 30 } } } })).json.pace).toEqual({
      post: { per_hour: 2, per_day: 10, min_gap_seconds: 5 },
      send_message: { min_gap_seconds: 30 },
    });
    for (const pace of [
      { tweet: { per_hour: 1 } },
      { post: { per_hour: -1 } },
      { post: { min_gap_seconds: -5 } },
      { post: { per_hour: 0 } },
      { post: { per_week: 3 } },
      { post: { per_hour: 1.5 } },
      { browser_steps: { per_hour: 1 } },
    ]) {
      const refused = await h.request("PATCH", path, { body: { pace } });
      expect(refused.status, JSON.stringify(pace)).toBe(422);
      expect(refused.json.error.code).toBe("invalid_request");
    }
    expect((await h.request("GET", path)).json.pace).toEqual({ post: { per_hour: 2, per_day: 10, min_gap_seconds: 5 }, send_message: { min_gap_seconds: 30 } });

    const restored = await h.request("PATCH", path, { body: { pace: { post: { per_hour: null, per_day: null, min_gap_seconds: null }, send_message: { min_gap_seconds: null } } } });
    expect(restored.json.pace).toEqual({ post: { per_hour: 600 } });
    expect((await h.store.accounts.get(alice))!.pace).toEqual({});
  });

  it("a looser pace lets a waiting action run at once", async () => {
    const { h, alice } = await setup();
    await h.request("PATCH", `/v1/accounts/${alice}`, { body: { pace: { post: { min_gap_seconds: 3600 } } } });
    expect((await ended(h, await post(h, alice, "one"))).status).toBe("succeeded");
    const second = await post(h, alice, "two");
    expect(await deferred(h, second)).toMatchObject({ status: "queued" });
    await h.request("PATCH", `/v1/accounts/${alice}`, { body: { pace: { post: { min_gap_seconds: null } } } });
    expect((await ended(h, second)).status).toBe("succeeded");
  });

  it("a paced action starts once its not_before has come, woken by its own timer (the heartbeat here a minute apart)", async () => {
    const h = (harness = await createHarness({
      executor: new ScriptedExecutor(),
      clock: new WallClock(),
      engine: { random: () => 0.5, platforms: [SCRIPTED_PLATFORM], runner: { heartbeatMs: 60_000 } },
    }));
    const alice = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "alice", password: "pw-123456" } })).json.id as string;
    expect((await h.request("PATCH", `/v1/accounts/${alice}`, { body: { pace: { post: { min_gap_seconds: 1 } } } })).status).toBe(200);
    expect((await ended(h, await post(h, alice, "one"))).status).toBe("succeeded");
    const second = await post(h, alice, "two");
    const { not_before: notBefore } = await deferred(h, second);
    // Well before the heartbeat (60 s), with room for a loaded machine.
    const done = await eventually(async () => (await statusOf(h, second)).status === "succeeded" && statusOf(h, second), 20_000);
    expect(Date.parse(done.finished_at)).toBeGreaterThanOrEqual(Date.parse(notBefore));
  });
});

describe("the wake-up timer", () => {
  it("fired before not_before by the engine's clock (a timer early against it, as Node's are under load), it sets itself again and the action starts once that time has come", async () => {
    // The engine's clock stands still while real time passes: every real timer fires early against it.
    const h = (harness = await createHarness({ executor: new ScriptedExecutor(), engine: { random: () => 0.5, platforms: [SCRIPTED_PLATFORM], runner: { heartbeatMs: 60_000 } } }));
    const alice = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "alice", password: "pw-123456" } })).json.id as string;
    await h.request("PATCH", `/v1/accounts/${alice}`, { body: { pace: { post: { min_gap_seconds: 1 } } } });
    expect((await ended(h, await post(h, alice, "one"))).status).toBe("succeeded");
    const second = await post(h, alice, "two");
    const { not_before: notBefore } = await deferred(h, second);
    const dueInMs = Date.parse(notBefore) - h.clock.now().getTime();
    // The timer set for not_before fires (real time passes it), early by the engine's clock: nothing may start.
    await new Promise((resolve) => setTimeout(resolve, dueInMs + 300));
    expect((await statusOf(h, second)).status).toBe("queued");
    // The engine's time comes; nobody pumps and the heartbeat is a minute away: only the wake-up starts it.
    h.clock.advance(dueInMs);
    expect((await ended(h, second)).status).toBe("succeeded");
  });
});

/** The engine's clock at real time: a wake-up timer is a real timer. */
class WallClock extends FakeClock {
  override now(): Date {
    return new Date();
  }
}
