import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../helpers/clock.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually, gate } from "../helpers/scripted-executor.js";

// A coordinator prefers accounts warm in its own browser (DESIGN §11 "Scaling out adds capacity";
// issue 41): an account moves to another coordinator only when the one that ran it last is
// saturated or gone. Two coordinators (engines with stores of their own) on one database: SQLite,
// or PostgreSQL under test:postgres. The accounts run first on A, before B exists, so A ran them last.
const harnesses: Harness[] = [];
afterEach(async () => {
  for (const harness of harnesses.splice(0).reverse()) await harness.destroy();
});

type HarnessOptions = NonNullable<Parameters<typeof createHarness>[0]>;

async function coordinator(options: HarnessOptions = {}, after?: Harness): Promise<Harness> {
  const shared = after ? { location: after.location, masterKey: after.masterKey, adminKey: after.adminKey } : {};
  const h = await createHarness({ clock: new FakeClock(new Date().toISOString()), ...shared, ...options });
  harnesses.push(h);
  return h;
}

async function account(h: Harness, username: string): Promise<string> {
  return (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username, password: "pw" } })).json.id as string;
}

async function post(h: Harness, accountId: string, text: string): Promise<string> {
  const created = await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text } } });
  expect(created.status).toBe(202);
  return created.json.id as string;
}

/** The runner that ran the action, once it has ended. */
async function ranOn(h: Harness, id: string): Promise<string> {
  const action = await eventually(async () => {
    const found = await h.store.actions.get(id);
    return found && ["succeeded", "failed"].includes(found.status) && found;
  }, { what: `${id} to end` });
  expect(action.status).toBe("succeeded");
  return action.runner_id!;
}

const runnerOf = (h: Harness): string => h.engine.core.runner.runnerId;

describe("claims and warm accounts", () => {
  it("an account A ran last runs on A while A has a free slot, though its actions are created through B", { timeout: 120_000 }, async () => {
    const a = await coordinator();
    const warm = await account(a, "warm");
    expect(await ranOn(a, await post(a, warm, "first"))).toBe(runnerOf(a));
    const b = await coordinator({}, a);
    for (let i = 0; i < 5; i++) expect(await ranOn(b, await post(b, warm, `through B ${i}`))).toBe(runnerOf(a));
  });

  it("an action created through B for an account warm on A wakes A at once, not at A's next heartbeat", { timeout: 120_000 }, async () => {
    // Heartbeats (the claims' backstop) 10 s apart: an action that starts sooner was started by a wake-up.
    const heartbeatMs = 10_000;
    const a = await coordinator({ engine: { runner: { heartbeatMs } } });
    const warm = await account(a, "warm");
    expect(await ranOn(a, await post(a, warm, "first"))).toBe(runnerOf(a));
    const b = await coordinator({ engine: { runner: { heartbeatMs } } }, a);
    for (let i = 0; i < 3; i++) {
      const created = Date.now();
      const id = await post(b, warm, `through B ${i}`);
      await eventually(async () => (await b.store.actions.get(id))?.status !== "queued", { what: `${id} to start`, timeoutMs: 60_000 });
      expect(Date.now() - created, `through B ${i}`).toBeLessThan(heartbeatMs / 2);
      expect(await ranOn(b, id)).toBe(runnerOf(a));
    }
  });

  it("moves to B when A is saturated, and when A is gone", { timeout: 120_000 }, async () => {
    const held = gate();
    const executor = new ScriptedExecutor().on("holds A's slot", async () => {
      await held.promise;
      return { ok: true };
    });
    // One run slot, its free slots renewed every 100 ms.
    const a = await coordinator({ executor, engine: { maxConcurrent: 1, runner: { heartbeatMs: 100 } } });
    const warm = await account(a, "warm");
    const other = await account(a, "other");
    expect(await ranOn(a, await post(a, warm, "first"))).toBe(runnerOf(a));
    expect(await ranOn(a, await post(a, other, "first"))).toBe(runnerOf(a));
    const b = await coordinator({}, a);

    const holding = await post(b, other, "holds A's slot");
    await eventually(async () => (await b.store.actions.get(holding))?.status === "running", { what: "A to take the action that fills its slot" });
    expect((await b.store.actions.get(holding))?.runner_id).toBe(runnerOf(a));
    await eventually(async () => (await b.store.runners.list()).find((runner) => runner.id === runnerOf(a))?.free_slots === 0, { what: "A's row to say it has no free slot" });
    expect(await ranOn(b, await post(b, warm, "A is saturated"))).toBe(runnerOf(b));
    held.open();
    expect(await ranOn(b, holding)).toBe(runnerOf(a));

    // Ran last by B now: B keeps it; then run on A again, and A stops.
    expect(await ranOn(a, await post(a, warm, "B ran it last"))).toBe(runnerOf(b));
    await a.stop();
    expect(await ranOn(b, await post(b, other, "A is gone"))).toBe(runnerOf(b));
  });

  it("a coordinator with one free slot takes the action of an account it ran last before an older one of a cold account", { timeout: 120_000 }, async () => {
    const held = gate();
    const executor = new ScriptedExecutor().on("holds the slot", async () => {
      await held.promise;
      return { ok: true };
    });
    const a = await coordinator({ executor, engine: { maxConcurrent: 1 } });
    const warm = await account(a, "warm");
    const cold = await account(a, "cold");
    const busy = await account(a, "busy");
    await ranOn(a, await post(a, warm, "first"));
    const holding = await post(a, busy, "holds the slot");
    await eventually(async () => (await a.store.actions.get(holding))?.status === "running", { what: "the slot to be taken" });
    const older = await post(a, cold, "queued first");
    const newer = await post(a, warm, "queued second");
    held.open();
    await ranOn(a, newer);
    await ranOn(a, older);
    expect(executor.started.indexOf(newer)).toBeLessThan(executor.started.indexOf(older));
  });
});
