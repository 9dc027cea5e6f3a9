import { describe, expect, it } from "vitest";
import { Clients } from "./clients.js";
import { startFleet } from "./fleet.js";
import { judge, report } from "./verdict.js";

/** A `?wait` on the coordinator whose feed died must return this soon after the action ended: seconds, far from its 30 s timeout. */
const LATE_BOUND_MS = 10_000;

// The change feed's connection dies without a word (a NAT or balancer dropped it: no FIN, no RST).
// A `?wait` held on that coordinator for an action another one runs must still end with the action.
describe("a coordinator whose LISTEN connection is blackholed", () => {
  it("still ends a ?wait=30 within seconds of the action's end when another coordinator ran it", async () => {
    const fleet = await startFleet("listen", [{ label: "A" }, { label: "B" }, { label: "C" }]);
    try {
      const clients = new Clients(fleet);
      const [account] = await fleet.accounts(1);
      await clients.signIn([account!], ["B"]);

      const a = fleet.member("A");
      const listen = a.proxy.listenConnection();
      expect(listen, `A sent no LISTEN; it sent: ${a.proxy.connections.flatMap((c) => c.statements.slice(0, 2)).join(" | ")}`).toBeDefined();
      listen!.blackhole();

      const tracked = await clients.create({ account: account!, via: ["B"], keyed: true });
      expect(tracked.id, tracked.unanswered).toBeDefined();
      // B's feed is alive: following there says when the action ended.
      const onA = (async () => {
        const response = await fetch(`${a.url}/v1/actions/${tracked.id}?wait=30`, { headers: fleet.headers() });
        return { at: Date.now(), json: (await response.json()) as { status: string } };
      })();
      await clients.follow(tracked, ["B"], Date.now() + 120_000);
      const answer = await onA;
      const [row] = await fleet.store.all<{ runner_id: string | null }>(`SELECT runner_id FROM actions WHERE id = '${tracked.id}'`);
      const ranOn = fleet.runners.get(row?.runner_id ?? "") ?? "?";
      const lateMs = answer.at - tracked.endedAt!;
      const verdict = await judge(fleet, clients, {
        fault: "A's LISTEN connection blackholed",
        unhealthy: [],
        notes: [
          `the post ran on ${ranOn} and ended ${((tracked.endedAt! - tracked.ackAt!) / 1000).toFixed(1)} s after its create`,
          `A's ?wait=30 returned ${(lateMs / 1000).toFixed(1)} s after the end, with status ${answer.json.status}`,
        ],
      });
      const table = report("listen-blackholed", verdict);
      console.log(table);
      expect(verdict.violations, table).toEqual([]);
      expect(ranOn, `${table}\nthe post ran on A itself: nothing to learn from A's feed`).not.toBe("A");
      expect(answer.json.status, table).toBe(tracked.final.status);
      expect(lateMs, table).toBeLessThan(LATE_BOUND_MS);
    } finally {
      await fleet.stop();
    }
  });
});
