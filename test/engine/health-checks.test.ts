import { afterEach, describe, expect, it } from "vitest";
import { ActionFailure } from "../../src/domain/errors.js";
import { CHECK_TYPE } from "../../src/domain/health.js";
import type { ExecutionContext } from "../../src/engine/execution/index.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually } from "../helpers/scripted-executor.js";

// The health checks' schedule and bookkeeping (DESIGN §16) on the real engine and store (SQLite
// here; PostgreSQL under test:postgres), the platform scripted and the clock fake: the schedule is
// driven tick by tick through `scheduleDue`, its timer left far in the future.
let h: Harness;

afterEach(async () => {
  await h?.destroy();
});

const HOUR = 60 * 60 * 1000;
const TICK = 60_000;

/** What the scripted platform's check finds, per account id (default: still signed in). */
function checks(found: Map<string, () => Promise<Record<string, unknown>>>, started: string[]): ScriptedExecutor {
  return new ScriptedExecutor().on(CHECK_TYPE, async (context: ExecutionContext) => {
    started.push(context.account.id);
    return (found.get(context.account.id) ?? (async () => ({ outcome: "connected" })))();
  });
}

async function setUp(options: { maxConcurrent?: number; found?: Map<string, () => Promise<Record<string, unknown>>> } = {}): Promise<string[]> {
  const started: string[] = [];
  h = await createHarness({
    executor: checks(options.found ?? new Map(), started),
    engine: { healthChecks: { intervalMinutes: 60, tickMs: TICK }, ...(options.maxConcurrent ? { maxConcurrent: options.maxConcurrent } : {}) },
  });
  return started;
}

/** Accounts connected now (their session found signed in now). */
async function connectedAccounts(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: `user${i}`, password: "pw" } })).json.id;
    await h.store.accounts.update(id, { status: "connected", checked_at: h.clock.now().toISOString() }, h.clock.now().toISOString());
    ids.push(id);
  }
  return ids;
}

async function account(id: string): Promise<any> {
  return (await h.request("GET", `/v1/accounts/${id}`)).json;
}

/** Waits until no check is queued, running or waiting. */
async function checksDone(ids: readonly string[]): Promise<void> {
  await eventually(async () => {
    for (const id of ids) if (await h.store.actions.hasOpenCheck(id)) return false;
    return true;
  });
}

describe("health checks: the schedule", () => {
  it("spreads the checks over the interval: each tick starts its share, and every account is checked once", async () => {
    const started = await setUp();
    const ids = await connectedAccounts(40);
    expect(await h.engine.healthChecks.scheduleDue()).toBe(0); // all were found signed in just now
    h.clock.advance(HOUR);
    const perTick: number[] = [];
    for (let tick = 0; tick < 60; tick++) {
      h.clock.advance(TICK);
      perTick.push(await h.engine.healthChecks.scheduleDue());
      await checksDone(ids);
    }
    // 40 accounts over 60 one-minute ticks: one a tick at most, never all at once.
    expect(Math.max(...perTick)).toBe(1);
    expect(started.toSorted()).toEqual(ids.toSorted());
    for (const id of ids) expect((await account(id)).status).toBe("connected");
    // Checked: none is due again within the interval.
    h.clock.advance(TICK);
    expect(await h.engine.healthChecks.scheduleDue()).toBe(0);
  });

  it("never checks an account beside its action, nor one an action used within the interval", async () => {
    const started = await setUp();
    const [busy, used, idle] = await connectedAccounts(3);
    h.clock.advance(HOUR + TICK);
    // `busy` has an action waiting for a person; `used` ran one a minute ago (it found the session signed in).
    await h.store.accounts.update(used!, { checked_at: new Date(h.clock.now().getTime() - TICK).toISOString() }, h.clock.now().toISOString());
    (h.executor as ScriptedExecutor).on("post", async (context) => {
      await context.challenge({ kind: "other", message: "Anything?" });
      return {};
    });
    const post = (await h.request("POST", "/v1/actions", { body: { account_id: busy, type: "post", params: { text: "hi" } } })).json.id;
    await eventually(async () => (await h.request("GET", `/v1/actions/${post}`)).json.status === "needs_input");
    for (let tick = 0; tick < 3; tick++) await h.engine.healthChecks.scheduleDue();
    await checksDone([busy!, used!, idle!]);
    expect(started).toEqual([idle]);
  });

  it("takes only idle run slots", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const started = await setUp({ maxConcurrent: 1 });
    const [working, due] = await connectedAccounts(2);
    (h.executor as ScriptedExecutor).on("post", async () => {
      await held;
      return {};
    });
    h.clock.advance(HOUR + TICK);
    await h.store.accounts.update(working!, { checked_at: h.clock.now().toISOString() }, h.clock.now().toISOString());
    const post = (await h.request("POST", "/v1/actions", { body: { account_id: working, type: "post", params: { text: "long" } } })).json.id;
    await eventually(async () => (await h.request("GET", `/v1/actions/${post}`)).json.status === "running");
    expect(await h.engine.healthChecks.scheduleDue()).toBe(0);
    release();
    await eventually(async () => (await h.request("GET", `/v1/actions/${post}`)).json.status === "succeeded");
    // Its slot is free once the run has let go of it (just after the action ended).
    await eventually(async () => (await h.engine.healthChecks.scheduleDue()) === 1);
    await checksDone([due!]);
    expect(started).toEqual([due]);
  });

  it("backs off after checks that could not find out: the next waits one interval, then two, then four", async () => {
    const found = new Map<string, () => Promise<Record<string, unknown>>>();
    const started = await setUp({ found });
    const [id] = await connectedAccounts(1);
    found.set(id!, async () => {
      throw new ActionFailure("browser_error", "The platform did not answer.");
    });
    h.clock.advance(HOUR + TICK);
    const checkedAt: number[] = [];
    // Ten hours, a tick a minute: when is it checked?
    for (let minute = 0; minute < 10 * 60; minute++) {
      if ((await h.engine.healthChecks.scheduleDue()) > 0) {
        checkedAt.push(minute);
        await checksDone([id!]);
      }
      h.clock.advance(TICK);
    }
    expect(started.length).toBe(checkedAt.length);
    const gaps = checkedAt.slice(1).map((at, i) => at - checkedAt[i]!);
    expect(gaps.slice(0, 3)).toEqual([60, 120, 240]);
    // What it could not find out says nothing of the session.
    expect((await account(id!)).status).toBe("connected");
    // A check that finds out ends the backoff.
    found.delete(id!);
    h.clock.advance(24 * HOUR);
    expect(await h.engine.healthChecks.scheduleDue()).toBe(1);
    await checksDone([id!]);
    expect(await h.store.accounts.checkFailures(id!)).toBe(0);
  });

  it("two coordinators scheduling the same due account queue one check", async () => {
    await setUp();
    const [id] = await connectedAccounts(1);
    h.clock.advance(HOUR + TICK);
    const now = h.clock.now().toISOString();
    const next = new Date(h.clock.now().getTime() + HOUR).toISOString();
    expect(await h.store.accounts.takeCheck(id!, now, next)).toBe(true);
    expect(await h.store.accounts.takeCheck(id!, now, next)).toBe(false);
  });
});

describe("health checks: what they find", () => {
  it("signed out with nobody to sign in: needs_auth with its reason and an account.updated event; a checkpoint: blocked", async () => {
    const found = new Map<string, () => Promise<Record<string, unknown>>>();
    await setUp({ found });
    const [out, blocked] = await connectedAccounts(2);
    found.set(out!, async () => {
      throw new ActionFailure("signed_out", "The session ended and signing in again needs a person.");
    });
    found.set(blocked!, async () => {
      throw new ActionFailure("account_blocked", "We restricted your account.");
    });
    for (const id of [out!, blocked!]) expect((await h.request("POST", `/v1/accounts/${id}/check`)).status).toBe(202);
    await checksDone([out!, blocked!]);
    expect(await account(out!)).toMatchObject({ status: "needs_auth", status_reason: "The session ended and signing in again needs a person." });
    expect(await account(blocked!)).toMatchObject({ status: "blocked", status_reason: "We restricted your account." });
    const events = (await h.store.events.list(h.workspaceId, 1_000)).filter((event) => event.type === "account.updated" && event.subject_id === out);
    expect(events.at(-1)!.data).toMatchObject({ status: "needs_auth" });
    // Not connected: not checked by the schedule any more.
    h.clock.advance(2 * HOUR);
    expect(await h.engine.healthChecks.scheduleDue()).toBe(0);
  });

  it("is free, never listed, never an action event; a check already queued is not queued twice", async () => {
    const found = new Map<string, () => Promise<Record<string, unknown>>>();
    await setUp({ found });
    const [id] = await connectedAccounts(1);
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => (finish = resolve));
    found.set(id!, async () => {
      await gate;
      return { outcome: "connected" };
    });
    const balance = (await h.request("GET", "/v1/credits")).json.balance;
    expect((await h.request("POST", `/v1/accounts/${id}/check`)).status).toBe(202);
    expect((await h.request("POST", `/v1/accounts/${id}/check`)).status).toBe(202);
    const checkIds = (await h.store.actions.withStatus(["queued", "running"])).filter((action) => action.type === CHECK_TYPE).map((action) => action.id);
    expect(checkIds).toHaveLength(1);
    finish();
    await checksDone([id!]);
    expect((await h.request("GET", `/v1/actions/${checkIds[0]}`)).status).toBe(404);
    expect((await h.request("GET", "/v1/actions")).json.data).toEqual([]);
    expect((await h.request("GET", "/v1/credits")).json.balance).toBe(balance);
    const actionEvents = (await h.store.events.list(h.workspaceId, 1_000)).filter((event) => event.type === "action.updated");
    expect(actionEvents).toEqual([]);
    // Kept a day, then purged with its challenges.
    h.clock.advance(25 * HOUR);
    await h.store.actions.purgeChecks(new Date(h.clock.now().getTime() - 24 * HOUR).toISOString());
    expect(await h.store.actions.get(checkIds[0]!)).toBeUndefined();
  });
});
