import { describe, expect, it } from "vitest";
import { sleep, within } from "../chaos/kill-support.js";
import { Clients } from "./clients.js";
import { startFleet } from "./fleet.js";
import { judge, report } from "./verdict.js";

/** The client gives up on its first request this long after sending it: past a runner's 15 s lease, so A's claim on the key has expired. */
const CLIENT_TIMEOUT_MS = 20_000;
/** A stays frozen until B has answered the retry, or this long. */
const LONGEST_FREEZE_MS = 40_000;

// One Idempotency-Key, two coordinators: A is frozen right after it sends the keyed request's
// insert into actions; the client, hearing nothing, retries the same request through B; then A
// wakes. The key must name one action, and the platform see one post.
describe("an Idempotency-Key whose first coordinator froze mid-create", () => {
  it("gives exactly one action and one post when the client retries through another coordinator and the first wakes", async () => {
    const fleet = await startFleet("idempotency", [{ label: "A" }, { label: "B" }, { label: "C" }]);
    try {
      const clients = new Clients(fleet);
      const [account] = await fleet.accounts(1);
      await clients.signIn([account!], ["B"]);

      const a = fleet.member("A");
      const frozen = a.proxy.freezeAfter('insert into "actions"');
      const first = clients.create({ account: account!, via: ["A"], keyed: true, requestTimeoutMs: CLIENT_TIMEOUT_MS, retryUntil: 0 });
      const event = await within(frozen, 30_000);
      expect(event, "A sent no insert into actions within 30 s").toBeDefined();
      const original = await first;
      // The client heard nothing: it sends the same request, with the same key, through B (a 409 while the key is in flight is retried).
      const retry = clients.create({ account: account!, via: ["B"], key: original.key, text: original.text, retryUntil: event!.at + 90_000 });
      await within(retry, Math.max(0, event!.at + LONGEST_FREEZE_MS - Date.now()));
      const thawAt = Date.now();
      a.proxy.thaw();
      const retried = await retry;
      // What A does once awake: its answer to the first request goes nowhere (the client left), its writes land or are refused.
      await sleep(3_000);
      const verdict = await judge(fleet, clients, {
        fault: `A frozen ${((thawAt - event!.at) / 1000).toFixed(0)} s after sending a keyed insert into actions; the client retried through B`,
        unhealthy: ["A"],
        notes: [
          `first request through A: ${original.id ? `answered ${original.id}` : original.unanswered}`,
          `retry through B: ${retried.id ? `answered ${retried.id} ${((retried.ackAt! - event!.at) / 1000).toFixed(1)} s after the freeze` : retried.unanswered}`,
        ],
      });
      const [record] = await fleet.store.all<{ action_id: string | null; state: string }>(`SELECT action_id, state FROM idempotency_keys WHERE key = '${original.key}'`);
      const actions = await fleet.store.all<{ id: string; status: string }>(`SELECT id, status FROM actions WHERE params LIKE '%${original.text}%'`);
      verdict.notes.push(`the key names ${record?.action_id ?? "nothing"} (${record?.state ?? "no record"}); actions with its text: ${actions.map((row) => `${row.id} ${row.status}`).join(", ")}`);
      const table = report("idempotency-key-frozen", verdict);
      console.log(table);
      expect(verdict.violations, table).toEqual([]);
      expect(retried.id, table).toBeDefined();
      expect(actions.map((row) => row.id), table).toEqual([retried.id]);
      expect(record?.action_id, table).toBe(retried.id);
    } finally {
      await fleet.stop();
    }
  });
});
