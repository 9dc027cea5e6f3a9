import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../helpers/clock.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { eventually, gate } from "../helpers/scripted-executor.js";

// Two coordinators (engines with stores of their own) on one PostgreSQL database. A coordinator
// that claimed an Idempotency-Key stalls inside its create — right before it writes the action — for
// longer than its lease; the key is settled as abandoned, the client's retry through the other
// coordinator creates the action; then the first wakes up (DESIGN §11, issue 40 item 3).
// PostgreSQL only: on SQLite's single writer a process stalled inside a transaction stops every other.
const harnesses: Harness[] = [];
afterEach(async () => {
  for (const harness of harnesses.splice(0).reverse()) await harness.destroy();
});

describe("an Idempotency-Key whose claimant stalled past its lease", () => {
  it("names one action: the retry elsewhere creates it, and the woken claimant creates none and answers with it", { timeout: 90_000 }, async () => {
    const started = new FakeClock(new Date().toISOString());
    const a = await createHarness({ clock: started });
    harnesses.push(a);
    const b = await createHarness({ location: a.location, masterKey: a.masterKey, adminKey: a.adminKey, clock: new FakeClock(new Date().toISOString()), engine: { runner: { heartbeatMs: 100 } } });
    harnesses.push(b);
    const accountId = (await a.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "alice", password: "pw" } })).json.id as string;
    const body = { account_id: accountId, type: "post", params: { text: "once, whatever happens" } };
    const headers = { "idempotency-key": "k-stalled" };

    // A stalls right before it writes its action: its claim on the key is in the store, in flight.
    const stalled = gate();
    const reached = gate();
    const insert = a.store.actions.insert.bind(a.store.actions);
    let stallNext = true;
    a.store.actions.insert = async (action) => {
      if (stallNext) {
        stallNext = false;
        reached.open();
        await stalled.promise;
      }
      return insert(action);
    };
    const first = a.request("POST", "/v1/actions", { body, headers });
    await reached.promise;
    // … past its lease: A's runner is gone as far as the fleet can tell.
    await a.store.runners.expire(a.engine.core.runner.runnerId, started.now().toISOString());

    // The client retries through B: 409 while the key is A's, then B settles A's claim and creates.
    const retried = await eventually(
      async () => {
        const response = await b.request("POST", "/v1/actions", { body, headers });
        return response.status === 409 ? undefined : response;
      },
      { what: "the retry through B to be answered with an action" },
    );
    expect(retried.status).toBe(202);

    // A wakes up and finishes its create.
    stalled.open();
    const late = await first;
    const actions = await a.store.actions.list({ workspaceId: a.workspaceId, limit: 10 });
    expect(actions.map((action) => action.id)).toEqual([retried.json.id]);
    expect(await a.store.idempotency.get(a.workspaceId, "k-stalled", new Date(0).toISOString())).toMatchObject({ action_id: retried.json.id, state: "done" });
    // A's answer is what the key says now: a replay of that one action.
    expect(late.headers.get("idempotency-replayed")).toBe("true");
    expect(late.json.id).toBe(retried.json.id);
    expect((await a.store.ledger.entries(a.workspaceId)).filter((entry) => entry.kind === "hold")).toHaveLength(1);
  });
});
