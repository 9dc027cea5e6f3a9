import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import type { ExecutionContext } from "../../src/engine/execution/index.js";
import type { PostgresAdapter } from "../../src/store/index.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually, gate } from "../helpers/scripted-executor.js";

// A lease holder's writes to rows other than the action's (here a failure screenshot) are made under
// a lock on the action's row (DESIGN §11, issue 40 item 8): a holder stalled inside such a write,
// after its fence was checked, cannot have it land after the action was handed over. PostgreSQL
// only: on SQLite the stalled writer holds the one write lock, and nothing is handed over meanwhile.
let h: Harness | undefined;
afterEach(async () => {
  await h?.destroy();
  h = undefined;
});

describe("a lease holder stalled inside a fenced write", () => {
  it("holds back the action's hand-over until its write has ended: the write never lands after the action moved on", { timeout: 90_000 }, async () => {
    let context: ExecutionContext | undefined;
    const executor = new ScriptedExecutor().on("post", async (run) => {
      context = run;
      await new Promise((_, reject) => run.signal.addEventListener("abort", () => reject(run.signal.reason as Error)));
      return {};
    });
    h = await createHarness({ executor });
    const harness = h;
    const accountId = (await harness.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "alice", password: "pw" } })).json.id;
    const actionId = (await harness.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text: "stalls" } } })).json.id as string;
    const run = await eventually(() => context, { what: "the run to start" });

    // The holder's screenshot write stalls after its fence was checked, inside its transaction.
    const stalled = gate();
    const reached = gate();
    const save = harness.store.feedback.saveScreenshot.bind(harness.store.feedback);
    harness.store.feedback.saveScreenshot = async (...args) => {
      reached.open();
      await stalled.promise;
      return save(...args);
    };
    const order: string[] = [];
    const write = run.saveFailureScreenshot(Buffer.from("png")).then(
      () => order.push("written"),
      () => order.push("refused"),
    );
    await reached.promise;

    // Recovery hands the action over meanwhile (as it does once the holder's lease has expired).
    const handOver = harness.engine.core.lifecycle.requeue(actionId, ["running"]).then((requeued) => order.push(requeued ? "handed over" : "not handed over"));
    const { url } = harness.store.adapter as PostgresAdapter;
    const watcher = new pg.Client({ connectionString: url });
    watcher.on("error", () => undefined);
    await watcher.connect();
    try {
      // Either it has gone through, or it waits for the row the holder has locked.
      await eventually(
        async () =>
          order.includes("handed over") ||
          (await watcher.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rowCount! > 0,
        { what: "the hand-over to end or wait for a lock" },
      );
    } finally {
      await watcher.end();
    }
    stalled.open();
    await Promise.all([write, handOver]);
    expect(order).toEqual(["written", "handed over"]);
  });
});
