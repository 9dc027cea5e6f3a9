import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeClock } from "../helpers/clock.js";
import { createHarness, type Harness, type HarnessOptions } from "../helpers/harness.js";
import { ScriptedExecutor, eventually, sleep } from "../helpers/scripted-executor.js";
import { newId } from "../../src/engine/ids.js";
import { Receiver } from "../events/support.js";

// What the timers found by polling is still found on time now that an idle coordinator polls
// nothing (DESIGN §11): the lease's renewal says what is due, and timers wait for the earliest
// known time. Two coordinators are two engines with stores of their own on one database; their
// clock is real time. SQLite and PostgreSQL.
const harnesses: Harness[] = [];
afterEach(async () => {
  for (const harness of harnesses.splice(0).reverse()) await harness.destroy();
});

/** The engine's clock at real time: deadlines and timers are real ones. */
class WallClock extends FakeClock {
  override now(): Date {
    return new Date();
  }
}

async function coordinator(options: HarnessOptions = {}, first?: Harness): Promise<Harness> {
  const shared = first ? { location: first.location, masterKey: first.masterKey, adminKey: first.adminKey } : {};
  const h = await createHarness({ clock: new WallClock(), ...shared, ...options });
  harnesses.push(h);
  return h;
}

async function account(h: Harness, username: string): Promise<string> {
  return (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username, password: "pw" } })).json.id as string;
}

const statusOf = async (h: Harness, id: string): Promise<string | undefined> => (await h.store.actions.get(id))?.status;

describe("work that is due, with nothing polling for it", () => {
  it("a challenge opened on another coordinator fails with challenge_timeout here within two seconds of its deadline", { timeout: 60_000 }, async () => {
    const executor = new ScriptedExecutor().on("connect", async (context) => {
      await context.challenge({ kind: "email_code", message: "We emailed you a code." });
      return { signed_in: true };
    });
    // A runs the action and pauses it, but never sweeps; B runs nothing and learns the deadline from the store.
    const a = await coordinator({ executor, engine: { challengeTtlSeconds: 4, sweepIntervalMs: 3_600_000 } });
    const b = await coordinator({ engine: { maxConcurrent: 0, sweepIntervalMs: 500 } }, a);
    const created = await a.request("POST", "/v1/actions", { body: { account_id: await account(a, "carol"), type: "connect" } });
    const id = created.json.id as string;
    await eventually(async () => (await statusOf(a, id)) === "needs_input", { what: "the action to pause at its challenge" });
    const expiresAt = Date.parse((await a.store.challenges.latestOf(id))!.expires_at);
    const failed = await eventually(async () => ((await statusOf(b, id)) === "failed" ? b.store.actions.get(id) : undefined), { what: "the deadline to fail the action", timeoutMs: 30_000 });
    expect(failed).toMatchObject({ error_code: "challenge_timeout" });
    expect(Date.parse(failed!.finished_at!) - expiresAt).toBeLessThanOrEqual(2_000);
  });

  it("a coordinator that stops renewing its lease: another recovers its running action once the lease has ended", { timeout: 60_000 }, async () => {
    const executor = new ScriptedExecutor().on("post", async (context) => {
      await sleep(60_000, context.signal);
      return {};
    });
    const a = await coordinator({ executor, engine: { runner: { leaseMs: 2_000, heartbeatMs: 500 } } });
    const b = await coordinator({ engine: { maxConcurrent: 0 } }, a);
    const created = await a.request("POST", "/v1/actions", { body: { account_id: await account(a, "dave"), type: "post", params: { text: "x" } } });
    const id = created.json.id as string;
    await eventually(async () => (await statusOf(a, id)) === "running", { what: "the action to run on A" });
    // A stalls as far as the store can tell: no renewal (and so no heartbeat) any more.
    a.engine.core.runner.renew = async () => undefined;
    // Back in the queue (B runs nothing): recovered by B within its lease (2 s) and B's heartbeat (3 s), with room for a loaded machine.
    await eventually(async () => (await statusOf(b, id)) === "queued", { what: "B to recover the action", timeoutMs: 20_000 });
  });

  it("queued work whose wake-up was lost is claimed at the next heartbeat; a paced one at its not_before", { timeout: 60_000 }, async () => {
    const executor = new ScriptedExecutor();
    const h = await coordinator({ executor });
    const accountId = await account(h, "erin");
    const account2 = await account(h, "frank");
    // Wake-ups lost: the change feed (other processes' commits, and on SQLite this one's too) hears nothing more.
    await h.store.changes.close();
    const insert = async (accountId: string, notBefore?: string): Promise<string> => {
      const now = new Date().toISOString();
      const id = newId("act");
      // Straight into the store, as another process would write it.
      await h.store.actions.insert({
        id,
        workspace_id: h.workspaceId,
        account_id: accountId,
        platform: "sandbox",
        type: "post",
        params: { text: id },
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
        not_before: notBefore,
      });
      return id;
    };
    const plain = await insert(accountId);
    // The heartbeat is 3 s apart: room for a loaded machine, far below "never".
    await eventually(async () => (await statusOf(h, plain)) === "succeeded", { what: "the queued action to run", timeoutMs: 20_000 });
    const notBefore = new Date(Date.now() + 2_000).toISOString();
    const paced = await insert(account2, notBefore);
    const ran = await eventually(async () => ((await statusOf(h, paced)) === "succeeded" ? h.store.actions.get(paced) : undefined), { what: "the paced action to run", timeoutMs: 20_000 });
    expect(Date.parse(ran!.started_at!)).toBeGreaterThanOrEqual(Date.parse(notBefore));
  });

  describe("webhook deliveries, the heartbeat a minute apart", () => {
    const receiver = new Receiver();
    const arrivals: number[] = [];
    beforeEach(async () => {
      arrivals.length = 0;
      receiver.received.length = 0;
      // The first attempt of each event is refused: its retry is due 1 s later.
      receiver.answer = ({ attempt }) => {
        arrivals.push(Date.now());
        return attempt === 1 ? 500 : 200;
      };
      await receiver.start();
    });
    afterEach(async () => {
      await receiver.stop();
    });

    it("an event's delivery goes out at once, and its retry when due, though nothing polls and no action changed", { timeout: 60_000 }, async () => {
      const h = await coordinator({ engine: { runner: { heartbeatMs: 60_000 }, webhooks: { allowPrivate: true, retryDelaysMs: [1_000] } } });
      const admin = (await h.engine.keys.authenticate(h.adminKey))!;
      const endpoint = await h.engine.webhooks.create(admin, { url: receiver.url });
      receiver.secret = endpoint.secret;
      // An account's creation is an account.updated event: no action, no status change.
      await account(h, "gina");
      await eventually(() => arrivals.length >= 2, { what: "the delivery and its retry", timeoutMs: 20_000 });
      expect(receiver.received.map((item) => item.event.type)).toEqual(["account.updated", "account.updated"]);
      expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(1_000);
    });
  });
});
