import { afterEach, describe, expect, it, vi } from "vitest";
import { ActionFailure } from "../../src/domain/errors.js";
import { CHECK_TYPE } from "../../src/domain/health.js";
import { silentLogger } from "../../src/engine/logger.js";
import { ServiceMetrics } from "../../src/metrics/index.js";
import type { ActionRecord } from "../../src/store/records.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { Scrape } from "../helpers/prometheus.js";
import { ScriptedExecutor, eventually, gate } from "../helpers/scripted-executor.js";

// The series a coordinator keeps (DESIGN §16), moved by the real engine on a real store (SQLite, or
// PostgreSQL under test:postgres) and read back through a Prometheus text parser. The browser is
// scripted here; test/live/metrics.test.ts runs the same through real Chromium and HTTP.
const open: { h: Harness; metrics: ServiceMetrics }[] = [];
afterEach(async () => {
  for (const { h, metrics } of open.splice(0).reverse()) {
    metrics.close();
    await h.destroy();
  }
});

async function coordinator(executor: ScriptedExecutor, shared?: Harness): Promise<{ h: Harness; metrics: ServiceMetrics; scrape(): Promise<Scrape> }> {
  const h = await createHarness({ executor, ...(shared ? { dir: shared.dir, location: shared.location, masterKey: shared.masterKey, clock: shared.clock, adminKey: shared.adminKey } : {}) });
  const name = `coordinator-${open.length}`;
  const metrics = new ServiceMetrics({ engine: h.engine, pool: { usage: () => [] }, coordinator: () => name, logger: silentLogger });
  open.push({ h, metrics });
  return { h, metrics, scrape: async () => new Scrape(await metrics.render()) };
}

async function account(h: Harness): Promise<string> {
  const created = await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: `u${Math.random().toString(36).slice(2, 10)}`, password: "pw-secret-123" } });
  expect(created.status).toBe(201);
  return created.json.id;
}

async function create(h: Harness, accountId: string, type: string, wait = 0): Promise<any> {
  const created = await h.request("POST", `/v1/actions?wait=${wait}`, { body: { account_id: accountId, type, params: type === "post" ? { text: `hi ${Math.random()}` } : {} } });
  expect(created.status).toBeLessThan(300);
  return created.json;
}

async function status(h: Harness, id: string): Promise<string | undefined> {
  return (await h.store.actions.get(id))?.status;
}

describe("metrics of one coordinator", () => {
  it("count each status change made here by platform, type, status and error code, every series labelled with the coordinator", async () => {
    const executor = new ScriptedExecutor().on("post", async () => ({ post_id: "p1" })).on("connect", async () => {
      throw new ActionFailure("ui_changed");
    });
    const { h, scrape } = await coordinator(executor);
    const accountId = await account(h);
    expect((await create(h, accountId, "post", 5)).status).toBe("succeeded");
    expect((await create(h, accountId, "connect", 5)).status).toBe("failed");
    const scraped = await scrape();
    expect(scraped.family("action_service_actions_total")?.type).toBe("COUNTER");
    for (const status of ["queued", "running", "succeeded"]) expect(scraped.value("action_service_actions_total", { platform: "sandbox", type: "post", status })).toBe(1);
    expect(scraped.value("action_service_actions_total", { type: "connect", status: "failed", error_code: "ui_changed" })).toBe(1);
    expect(scraped.samples("action_service_actions_total", { type: "post", status: "succeeded" })[0]!.labels).not.toHaveProperty("error_code");
    expect(scraped.lines().length).toBeGreaterThan(10);
    for (const { name, labels } of scraped.lines()) expect(labels.coordinator, name).toBe("coordinator-0");
  });

  it("observe the wait (queued → started) and the run (started → ended) on the engine's clock", async () => {
    const hold = gate();
    let posts = 0;
    const executor = new ScriptedExecutor().on("post", async () => {
      posts += 1;
      if (posts === 1) await hold.promise;
      return { post_id: `p${posts}` };
    });
    const { h, scrape } = await coordinator(executor);
    const accountId = await account(h);
    const first = await create(h, accountId, "post");
    await eventually(async () => (await status(h, first.id)) === "running");
    // One action at a time per account: the second waits in the queue while the first runs.
    const second = await create(h, accountId, "post");
    h.clock.advance(3_000);
    hold.open();
    await eventually(async () => (await status(h, second.id)) === "succeeded");
    const scraped = await scrape();
    expect(scraped.family("action_service_action_wait_seconds")?.type).toBe("HISTOGRAM");
    expect(scraped.histogram("action_service_action_wait_seconds", { platform: "sandbox", type: "post" })).toEqual({ count: 2, sum: 3 });
    expect(scraped.histogram("action_service_action_run_seconds", { platform: "sandbox", type: "post", status: "succeeded" })).toEqual({ count: 2, sum: 3 });
  });

  it("count challenges by kind and answers by who answered; queue depth, run slots and paused pages are read when scraped", async () => {
    const executor = new ScriptedExecutor()
      .on("connect", async (context) => ({ code: await context.challenge({ kind: "email_code", message: "We emailed a code." }) }))
      .on("post", async () => ({ post_id: "p1" }));
    const { h, scrape } = await coordinator(executor);
    const accountId = await account(h);
    const connect = await create(h, accountId, "connect", 5);
    expect(connect.status).toBe("needs_input");
    const post = await create(h, accountId, "post");
    const paused = await scrape();
    expect(paused.value("action_service_challenges_total", { kind: "email_code" })).toBe(1);
    expect(paused.value("action_service_queued_actions")).toBe(1);
    expect(paused.value("action_service_paused_pages")).toBe(1);
    expect(paused.value("action_service_run_slots_in_use")).toBe(0);
    expect(paused.value("action_service_challenge_answers_total")).toBe(0);
    expect((await h.request("POST", `/v1/actions/${connect.id}/answer?wait=5`, { body: { answer: "123456" } })).json.status).toBe("succeeded");
    await eventually(async () => (await status(h, post.id)) === "succeeded");
    const answered = await scrape();
    expect(answered.value("action_service_challenge_answers_total", { kind: "email_code", answered_by: "agent" })).toBe(1);
    expect(answered.value("action_service_challenges_total")).toBe(1);
    expect(answered.value("action_service_queued_actions")).toBe(0);
    expect(answered.value("action_service_paused_pages")).toBe(0);
  });

  it("count a challenge whose kind is still being read when scraped: the scrape waits for it", async () => {
    const executor = new ScriptedExecutor().on("connect", async (context) => ({ code: await context.challenge({ kind: "email_code", message: "We emailed a code." }) }));
    const { h, scrape } = await coordinator(executor);
    const accountId = await account(h);
    // A busy database: the read the count makes as the action pauses (the first after the pause is
    // told) comes back only once the scrape has begun.
    const reply = gate();
    let holdNext = false;
    const held = vi.fn();
    h.engine.core.lifecycle.events.prependListener("change", (action) => (holdNext ||= action.status === "needs_input"));
    const latestOf = h.store.challenges.latestOf.bind(h.store.challenges);
    vi.spyOn(h.store.challenges, "latestOf").mockImplementation(async (actionId) => {
      const hold = holdNext;
      holdNext = false;
      const challenge = await latestOf(actionId);
      if (hold) {
        held();
        await reply.promise;
      }
      return challenge;
    });
    expect((await create(h, accountId, "connect", 5)).status).toBe("needs_input");
    await eventually(async () => held.mock.calls.length === 1);
    const scraping = scrape();
    setTimeout(reply.open, 50);
    expect((await scraping).value("action_service_challenges_total", { kind: "email_code" })).toBe(1);
  });

  it("count a TOTP code from the stored secret as an answer by totp, not as another start", async () => {
    const executor = new ScriptedExecutor().on("connect", async (context) => ({ claimed: await context.claimTotpStep(Math.floor(context.clock.now().getTime() / 30_000)) }));
    const { h, scrape } = await coordinator(executor);
    const connect = await create(h, await account(h), "connect", 5);
    expect(connect).toMatchObject({ status: "succeeded", result: { claimed: true }, answered_by: "totp" });
    const scraped = await scrape();
    expect(scraped.value("action_service_challenge_answers_total", { kind: "two_factor_code", answered_by: "totp" })).toBe(1);
    expect(scraped.value("action_service_actions_total", { type: "connect", status: "running" })).toBe(1);
    expect(scraped.value("action_service_challenges_total")).toBe(0);
  });

  it("count a code the inbox already held as a challenge and an answer by inbox, though the action never paused", async () => {
    const executor = new ScriptedExecutor().on("connect", async (context) => ({ code: await context.challenge({ kind: "email_code", message: "We emailed a code." }) }));
    const { h, scrape } = await coordinator(executor);
    const accountId = await account(h);
    expect((await h.request("POST", `/v1/accounts/${accountId}/messages`, { body: { channel: "email", text: "Your verification code is 246810" } })).status).toBe(202);
    const connect = await create(h, accountId, "connect", 5);
    expect(connect).toMatchObject({ status: "succeeded", result: { code: "246810" }, answered_by: "inbox" });
    const scraped = await scrape();
    expect(scraped.value("action_service_challenges_total", { kind: "email_code" })).toBe(1);
    expect(scraped.value("action_service_challenge_answers_total", { kind: "email_code", answered_by: "inbox" })).toBe(1);
    expect(scraped.value("action_service_actions_total", { type: "connect", status: "needs_input" })).toBe(0);
    expect(scraped.value("action_service_actions_total", { type: "connect", status: "running" })).toBe(1);
  });

  it("count health checks by outcome, never as actions, and leave queued checks out of the queue's depth", async () => {
    const hold = gate();
    const executor = new ScriptedExecutor().on("post", async () => {
      await hold.promise;
      return { post_id: "p1" };
    });
    const { h, scrape } = await coordinator(executor);
    const accountId = await account(h);
    const post = await create(h, accountId, "post");
    await eventually(async () => (await status(h, post.id)) === "running");
    // A check waits behind the account's running action (never beside it), as the health checks do.
    const check = checkAction(h, accountId);
    await h.store.actions.insert(check);
    expect((await scrape()).value("action_service_queued_actions")).toBe(0);
    expect(await h.engine.core.lifecycle.finish(check.id, { status: "failed", code: "account_blocked" })).toBe(true);
    hold.open();
    await eventually(async () => (await status(h, post.id)) === "succeeded");
    const scraped = await scrape();
    expect(scraped.value("action_service_health_checks_total", { outcome: "blocked" })).toBe(1);
    expect(scraped.value("action_service_health_checks_total")).toBe(1);
    expect(scraped.value("action_service_actions_total", { type: CHECK_TYPE })).toBe(0);
    expect(scraped.value("action_service_actions_total", { type: "post" })).toBe(3);
  });
});

describe("metrics of two coordinators on one store", () => {
  it("count a change only where it was made, so their sums count it once; the run is timed where it started", async () => {
    const endless = (): ScriptedExecutor =>
      new ScriptedExecutor().on("post", (context) => new Promise((_, reject) => context.signal.addEventListener("abort", () => reject(context.signal.reason), { once: true })));
    const there = await coordinator(endless());
    const accountId = await account(there.h);
    const post = await create(there.h, accountId, "post");
    await eventually(async () => (await status(there.h, post.id)) === "running");
    // Started after the claim, `here` cannot have run it: it only cancels it.
    const here = await coordinator(endless(), there.h);
    expect((await here.h.request("POST", `/v1/actions/${post.id}/cancel`)).json.status).toBe("canceled");
    // `there` hears of the cancel as another process's change: its run ends there.
    await eventually(async () => (await there.scrape()).histogram("action_service_action_run_seconds", { status: "canceled" }).count === 1);
    const [thereNow, hereNow] = [await there.scrape(), await here.scrape()];
    const counts = (status: string): number[] => [thereNow, hereNow].map((scraped) => scraped.value("action_service_actions_total", { status }));
    expect(counts("queued")).toEqual([1, 0]);
    expect(counts("running")).toEqual([1, 0]);
    expect(counts("canceled")).toEqual([0, 1]);
    expect(hereNow.histogram("action_service_action_run_seconds").count).toBe(0);
  });
});

/** A queued health check of the account: an internal action of type `check`, free. */
function checkAction(h: Harness, accountId: string): Omit<ActionRecord, "seq"> {
  const now = h.clock.now().toISOString();
  return {
    id: `act_check_${Math.random().toString(36).slice(2, 10)}`,
    workspace_id: h.workspaceId,
    account_id: accountId,
    platform: "sandbox",
    type: CHECK_TYPE as ActionRecord["type"],
    params: {},
    status: "queued",
    error_code: undefined,
    error_message: undefined,
    result: undefined,
    price: 0,
    cost: 0,
    held: false,
    runner_id: undefined,
    lease: 0,
    committed_at: undefined,
    created_at: now,
    updated_at: now,
    finished_at: undefined,
  };
}
