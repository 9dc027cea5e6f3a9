import { describe, expect, it } from "vitest";
import { sleep, within } from "../chaos/kill-support.js";
import { Clients, type Tracked } from "./clients.js";
import { startFleet } from "./fleet.js";
import { judge, report } from "./verdict.js";

/** How long the fleet runs steadily before the fault, and how long A stays frozen. */
const BEFORE_MS = 10_000;
const FROZEN_MS = 20_000;
/** While A is frozen, a create goes to B or C this often (on accounts of their own, so none waits behind the load's). */
const PROBE_EVERY_MS = 3_000;

// A coordinator paused (by the kernel, a long GC) right after it sent a write inside a transaction:
// every connection it has to PostgreSQL stops in both directions, nothing closed, its transaction
// open on the server holding its locks. The other two go on creating and finishing posts.
describe("a coordinator frozen in the middle of a write", () => {
  it("does not stop the rest of the fleet: B and C keep creating and finishing posts; nothing is lost or posted twice; no healthy coordinator's action is interrupted", async () => {
    const started = Date.now();
    const fleet = await startFleet("frozen", [{ label: "A" }, { label: "B" }, { label: "C" }]);
    const phase = (name: string): void => console.log(`[frozen-mid-write] ${name} at ${((Date.now() - started) / 1000).toFixed(1)} s`);
    phase("fleet up");
    try {
      const clients = new Clients(fleet);
      const accounts = await fleet.accounts(6);
      await clients.signIn(accounts, ["B", "C"]);

      phase("accounts signed in");
      let loading = true;
      const loadStart = Date.now();
      const load = clients.load(accounts.slice(0, 3), ["B", "C"], () => loading);
      await sleep(BEFORE_MS);

      const a = fleet.member("A");
      const frozen = a.proxy.freezeAfter('insert into "events"');
      // A write through A: its insert of the action's event is where A freezes (or an earlier event of A's own runner).
      const write = clients.create({ account: accounts[3]!, via: ["A"], requestTimeoutMs: 150_000 });
      const event = await within(frozen, 30_000);
      expect(event, "A sent no insert into events within 30 s").toBeDefined();
      const probes: Promise<Tracked>[] = [];
      for (let probe = 0; Date.now() < event!.at + FROZEN_MS - 5_000; probe++) {
        probes.push(clients.create({ account: accounts[4 + (probe % 2)]!, via: [probe % 2 === 0 ? "B" : "C"], keyed: true, requestTimeoutMs: 150_000 }));
        await sleep(PROBE_EVERY_MS);
      }
      await sleep(Math.max(0, event!.at + FROZEN_MS - Date.now()));
      const thawAt = Date.now();
      const answeredDuring = (await Promise.all(probes.map((probe) => within(probe, 0)))).filter((tracked) => tracked?.ackAt !== undefined && tracked.ackAt < thawAt).length;
      a.proxy.thaw();
      loading = false;
      await Promise.all([load, write, ...probes]);

      const before = clients.endedBetween(loadStart, event!.at) / ((event!.at - loadStart) / 1000);
      const inFault = clients.endedBetween(event!.at, thawAt) / ((thawAt - event!.at) / 1000);
      phase("load ended");
      const verdict = await judge(fleet, clients, {
        fault: `A frozen ${FROZEN_MS / 1000} s after sending \`${event!.statement.slice(0, 40)}…\` (connection ${event!.connection.n})`,
        unhealthy: ["A"],
        throughput: { before, during: inFault },
        notes: [
          `posts finished by B and C: ${clients.endedBetween(loadStart, event!.at)} in the ${((event!.at - loadStart) / 1000).toFixed(1)} s before, ${clients.endedBetween(event!.at, thawAt)} in the ${((thawAt - event!.at) / 1000).toFixed(1)} s of the freeze`,
          `creates sent to B and C during the freeze (one every ${PROBE_EVERY_MS / 1000} s, up to 5 s before the thaw): ${probes.length}, answered before the thaw: ${answeredDuring}`,
        ],
      });
      phase("judged");
      const table = report("frozen-mid-write", verdict);
      console.log(table);
      expect(verdict.violations, table).toEqual([]);
      // The fleet keeps working: at least a quarter of its pace, and every create answered while A is frozen.
      expect(clients.endedBetween(event!.at, thawAt), table).toBeGreaterThanOrEqual(3);
      expect(inFault / before, table).toBeGreaterThanOrEqual(0.25);
      expect(answeredDuring, table).toBe(probes.length);
    } finally {
      await fleet.stop();
    }
  });
});
