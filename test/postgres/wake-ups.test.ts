import { afterEach, describe, expect, it } from "vitest";
import type { EngineOptions } from "../../src/engine/engine.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, gate } from "../helpers/scripted-executor.js";
import { eventually } from "../helpers/wait.js";

// DESIGN §11, "Scaling out adds capacity": a commit wakes only the coordinators that must act, never
// its own writer. Coordinators are engines in this process on one PostgreSQL database (each its own
// store: its own pool, LISTEN connection and origin). Runs under `npm run test:postgres` only.
const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0).reverse()) await h.destroy();
});

/**
 * A coordinator whose timers do not fire during a test (heartbeat, deadline sweep,
 * health checks): every statement it sends is one a wake-up made it send.
 */
const QUIET: Partial<EngineOptions> = {
  sweepIntervalMs: 600_000,
  runner: { heartbeatMs: 600_000, leaseMs: 1_200_000 },
  webhooks: { allowPrivate: false },
  healthChecks: { intervalMinutes: 0 },
};

/** Coordinators on one fresh database, every one quiet; the first made the workspace (with `firstEngine` on top of `QUIET`). */
async function coordinators(
  count: 1 | 2 | 3,
  executor: () => ScriptedExecutor = () => new ScriptedExecutor(),
  firstEngine: Partial<EngineOptions> = {},
): Promise<Harness[] & Record<0 | 1 | 2, Harness>> {
  const first = await createHarness({ executor: executor(), engine: { ...QUIET, ...firstEngine } });
  open.push(first);
  const all = [first];
  for (let n = 1; n < count; n++) {
    const next = await createHarness({ executor: executor(), engine: QUIET, location: first.location, masterKey: first.masterKey, adminKey: first.adminKey, clock: first.clock });
    open.push(next);
    all.push(next);
  }
  return all as Harness[] & Record<0 | 1 | 2, Harness>;
}

async function account(h: Harness, username: string): Promise<string> {
  return (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username, password: "pw" } })).json.id as string;
}

async function post(h: Harness, accountId: string, text: string): Promise<string> {
  const created = await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text } } });
  expect(created.status).toBe(202);
  return created.json.id as string;
}

const statusOf = async (h: Harness, id: string): Promise<string | undefined> => (await h.store.actions.get(id))?.status;

/** No statement for `ms`: what the coordinator's start or the setup woke it for is over. */
async function quiet(h: Harness, ms = 1_000): Promise<void> {
  let count = h.store.statementCount;
  let since = Date.now();
  await eventually(
    () => {
      if (h.store.statementCount !== count) [count, since] = [h.store.statementCount, Date.now()];
      return Date.now() - since >= ms;
    },
    { what: "the coordinator to fall quiet" },
  );
}

/** Settle time after the last change: notifications reach a LISTEN connection in milliseconds; this is far more. */
const SETTLE_MS = 1_500;

describe("wake-ups on PostgreSQL", () => {
  it("a post created and run on A makes B, which neither holds nor follows it, send no statement", { timeout: 90_000 }, async () => {
    const [a, b] = await coordinators(2);
    const accountId = await account(a, "only-a");
    // Warm: the account's first post is not the one counted.
    const warmUp = await post(a, accountId, "warm-up");
    await eventually(async () => (await statusOf(a, warmUp)) === "succeeded", { what: "the warm-up post" });
    await quiet(b);
    const before = { a: a.store.statementCount, b: b.store.statementCount };
    const posts: string[] = [];
    for (let i = 0; i < 5; i++) posts.push(await post(a, accountId, `post ${i}`));
    for (const id of posts) await eventually(async () => (await statusOf(a, id)) === "succeeded", { what: `${id} to run on A` });
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    for (const id of posts) expect((await a.store.actions.get(id))!.runner_id).toBe(a.engine.core.runner.runnerId);
    const sent = { a: a.store.statementCount - before.a, b: b.store.statementCount - before.b };
    console.log(`statements per post, created and run on A with B beside it: A ${sent.a / posts.length}, B ${sent.b / posts.length}`);
    expect(sent.b).toBe(0);
  });

  it("an answer posted through B wakes only the runner holding the action (A); C sends no statement", { timeout: 90_000 }, async () => {
    const asks = (): ScriptedExecutor => new ScriptedExecutor().on("post", async (context) => ({ code: await context.challenge({ kind: "email_code", message: "We emailed a code." }) }));
    const [a, b, c] = await coordinators(3, asks);
    const accountId = await account(a, "asks");
    const id = await post(a, accountId, "needs a code");
    await eventually(async () => (await statusOf(a, id)) === "needs_input", { what: "the action to pause on A" });
    expect(a.engine.core.runner.isRunning(id)).toBe(true);
    await quiet(c);
    const before = c.store.statementCount;
    const answered = await b.request("POST", `/v1/actions/${id}/answer`, { body: { answer: "123456" } });
    expect(answered.status).toBe(202);
    const done = await eventually(async () => {
      const action = await a.store.actions.get(id);
      return action?.status === "succeeded" && action;
    }, { what: "A to take the answer and finish" });
    expect(done.result).toEqual({ code: "123456" });
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    expect(c.store.statementCount - before).toBe(0);
  });

  it("a ?wait held on B for an action running on A ends at once when it ends, and B reads nothing of A's other actions", { timeout: 90_000 }, async () => {
    const held = gate();
    const executor = (): ScriptedExecutor => new ScriptedExecutor().on("held", async () => (await held.promise, { done: true }));
    const [a, b] = await coordinators(2, executor);
    const waitedOn = await post(a, await account(a, "waited-on"), "held");
    await eventually(async () => (await statusOf(a, waitedOn)) === "running", { what: "the held action to run on A" });
    await quiet(b);
    const before = b.store.statementCount;
    const waiting = b.request("GET", `/v1/actions/${waitedOn}?wait=20`);
    // Meanwhile A runs ten other posts: B follows none of them.
    const others = await account(a, "others");
    const posts: string[] = [];
    for (let i = 0; i < 10; i++) posts.push(await post(a, others, `other ${i}`));
    for (const id of posts) await eventually(async () => (await statusOf(a, id)) === "succeeded", { what: `${id} to run on A` });
    const opened = Date.now();
    held.open();
    const seen = await waiting;
    const afterMs = Date.now() - opened;
    expect(seen.json.status).toBe("succeeded");
    // Woken by the notification, not by B's heartbeat (ten minutes) or the feed's slow poll (30 s);
    // the bound is loose for a loaded machine, what it guards against is tens of seconds.
    expect(afterMs).toBeLessThan(10_000);
    // The wait's own reads (the action, its presentation) and one look per change of the action it
    // follows; ten other posts read here would be tens more (the old code: every commit, a look).
    const sent = b.store.statementCount - before;
    console.log(`B's statements while its wait followed one action and A ran ten others: ${sent}`);
    expect(sent).toBeLessThan(20);
  });

  it("a post created through B with ?wait for an account warm on A: B runs no claim, neither reads the outbox, B's wait ends on A's notification", { timeout: 90_000 }, async () => {
    const [a, b] = await coordinators(2);
    const accountId = await account(a, "warm-on-a");
    const warmUp = await post(a, accountId, "warm-up");
    await eventually(async () => (await statusOf(a, warmUp)) === "succeeded", { what: "the warm-up post on A" });
    await quiet(b);
    let claims = 0;
    const claim = b.engine.core.lifecycle.claim.bind(b.engine.core.lifecycle);
    b.engine.core.lifecycle.claim = async (...args) => {
      claims += 1;
      return claim(...args);
    };
    const looks = { a: 0, b: 0 };
    for (const [name, h] of [["a", a], ["b", b]] as const) {
      const read = h.store.events.actionsChangedAfter.bind(h.store.events);
      h.store.events.actionsChangedAfter = async (...args) => {
        looks[name] += 1;
        return read(...args);
      };
    }
    const before = b.store.statementCount;
    const posts = 5;
    for (let i = 0; i < posts; i++) {
      const waited = await b.request("POST", "/v1/actions?wait=20", { body: { account_id: accountId, type: "post", params: { text: `through B ${i}` } } });
      expect(waited.json.status).toBe("succeeded");
      expect((await b.store.actions.get(waited.json.id as string))!.runner_id).toBe(a.engine.core.runner.runnerId);
    }
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    console.log(`B's statements per post created through it with ?wait and run on A: ${(b.store.statementCount - before) / posts}`);
    // A claim on B would pass the action over for A (the old code: one per create); the wait hears
    // A's notifications (the old code: a look at the outbox for each change of the action); A, named
    // by the new action's notification as where its account is warm, claims it and reads nothing
    // of B's insert (the old code took it for a run of its own and looked).
    expect(claims).toBe(0);
    expect(looks).toEqual({ a: 0, b: 0 });
  });

  it("queued work its creator cannot take (no free run slot) wakes the others: B claims it at once, not at its heartbeat", { timeout: 90_000 }, async () => {
    const held = gate();
    const executor = (): ScriptedExecutor => new ScriptedExecutor().on("held", async () => (await held.promise, { done: true }));
    const [a, b] = await coordinators(2, executor, { maxConcurrent: 1 });
    // A's one run slot is taken; B's heartbeat (its claim backstop) is ten minutes away.
    const busy = await post(a, await account(a, "busy"), "held");
    await eventually(async () => (await statusOf(a, busy)) === "running", { what: "A's slot to fill" });
    await quiet(b);
    const created = Date.now();
    const handed = await post(a, await account(a, "handed"), "for whoever has a slot");
    const ran = await eventually(async () => {
      const action = await a.store.actions.get(handed);
      return action?.status === "succeeded" && action;
    }, { what: "B to take and run the action A could not" });
    expect(ran.runner_id).toBe(b.engine.core.runner.runnerId);
    expect(Date.now() - created).toBeLessThan(60_000);
    held.open();
  });

  it("a claim that fills its coordinator's last free slot with the last queued action wakes no one: B sends no statement", { timeout: 90_000 }, async () => {
    const [a, b] = await coordinators(2, undefined, { maxConcurrent: 1 });
    const accountId = await account(a, "one-slot");
    const warmUp = await post(a, accountId, "warm-up");
    await eventually(async () => (await statusOf(a, warmUp)) === "succeeded", { what: "the warm-up post" });
    await quiet(b);
    const before = b.store.statementCount;
    // Each post fills A's one slot (its claim takes as many as it may): nothing else is queued.
    for (let i = 0; i < 3; i++) {
      const id = await post(a, accountId, `post ${i}`);
      await eventually(async () => (await statusOf(a, id)) === "succeeded", { what: `post ${i} to run on A` });
    }
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    // The old code woke every other coordinator at each such claim: B claimed (and found nothing) three times.
    expect(b.store.statementCount - before).toBe(0);
  });

  it("a coordinator's own commits wake none of its own followers: no claim beyond its own, no read of its own changes", { timeout: 90_000 }, async () => {
    const [a] = await coordinators(1);
    const { lifecycle } = a.engine.core;
    const accountId = await account(a, "own");
    await quiet(a);
    let claims = 0;
    const claim = lifecycle.claim.bind(lifecycle);
    lifecycle.claim = async (...args) => {
      claims += 1;
      return claim(...args);
    };
    let looks = 0;
    const read = a.store.events.actionsChangedAfter.bind(a.store.events);
    a.store.events.actionsChangedAfter = async (...args) => {
      looks += 1;
      return read(...args);
    };
    const told: string[] = [];
    a.engine.onChange((action) => told.push(action.status));
    // Waited on here, so followed: its own changes are told as they commit, once each.
    const waited = await a.request("POST", "/v1/actions?wait=20", { body: { account_id: accountId, type: "post", params: { text: "own" } } });
    expect(waited.json.status).toBe("succeeded");
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    expect(told).toEqual(["queued", "running", "succeeded"]);
    // The create's own claim, and the one after the run ended (its slot free again): none woken by its own notifications.
    expect(claims).toBeLessThanOrEqual(2);
    expect(looks).toBe(0);
  });
});
