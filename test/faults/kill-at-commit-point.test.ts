import { describe, expect, it } from "vitest";
import { sleep } from "../chaos/kill-support.js";
import { eventually } from "../helpers/wait.js";
import { Clients } from "./clients.js";
import { slowPlatform, startFleet } from "./fleet.js";
import { judge, report } from "./verdict.js";

/** The fleet runs this long before C may be killed: the throughput before. */
const BEFORE_MS = 8_000;

// kill -9 of a coordinator while it is past the commit point of a post (the Post button clicked,
// the platform slow to answer): not started again, so the others must find its expired lease.
describe("kill -9 of a coordinator at a commit point", () => {
  it("doubles nothing, ends every acknowledged action, and interrupts nothing of the survivors", async () => {
    const fleet = await startFleet("kill", [{ label: "A" }, { label: "B" }, { label: "C" }]);
    try {
      const clients = new Clients(fleet);
      const accounts = await fleet.accounts(4);
      await clients.signIn(accounts, ["A", "B", "C"]);
      // C must hold an account's work for a post of its to pass the commit point.
      const onC = await clients.warmOn(accounts, "C");
      if (!accounts.includes(onC)) accounts.push(onC);
      // Each form POST answers 1.5 s late: a wide window past the commit point.
      await slowPlatform(fleet, 1_500);
      let loading = true;
      const loadStart = Date.now();
      const load = clients.load(accounts, ["A", "B", "C"], () => loading);
      await sleep(BEFORE_MS);
      const c = fleet.member("C");
      const heldByC = async (committed: boolean): Promise<string[]> => {
        const rows = await fleet.store.all<{ id: string; runner_id: string }>(
          `SELECT id, runner_id FROM actions WHERE status IN ('running', 'needs_input')${committed ? " AND committed_at IS NOT NULL" : ""}`,
        );
        return rows.filter((row) => fleet.runners.get(row.runner_id) === "C").map((row) => row.id);
      };
      const held = await eventually(async () => (await heldByC(true)).join(", "), { what: "C to hold a post past its commit point", timeoutMs: 120_000, everyMs: 20 });
      const killAt = Date.now();
      await c.kill();
      // The survivors find C's lease expired and recover what it held; the load goes on meanwhile.
      await eventually(async () => (await heldByC(false)).length === 0, { what: "A or B to recover C's actions", timeoutMs: 90_000, everyMs: 200 });
      await sleep(2_000);
      const afterEnd = Date.now();
      loading = false;
      await load;
      const verdict = await judge(fleet, clients, {
        fault: `kill -9 of C past the commit point of ${held}; recovered ${((afterEnd - 2_000 - killAt) / 1000).toFixed(1)} s later`,
        unhealthy: ["C"],
        throughput: { before: clients.endedBetween(loadStart, killAt) / ((killAt - loadStart) / 1000), during: clients.endedBetween(killAt, afterEnd) / ((afterEnd - killAt) / 1000) },
      });
      const table = report("kill-at-commit-point", verdict);
      console.log(table);
      expect(verdict.violations, table).toEqual([]);
    } finally {
      await fleet.stop();
    }
  });
});
