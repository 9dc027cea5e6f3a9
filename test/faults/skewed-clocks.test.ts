import { describe, expect, it } from "vitest";
import { Clients } from "./clients.js";
import { slowPlatform, startFleet } from "./fleet.js";
import { judge, report } from "./verdict.js";

const POSTS = 12;

// Clocks off by 40 s each way (libfaketime under B's and C's Node and Chromium): leases, deadlines
// and every expiry must be judged by one clock, the database's, so nobody's action looks abandoned.
describe("coordinators whose clocks are 40 s ahead and 40 s behind", () => {
  it("take no action from its live holder: none requeued or failed as interrupted; nothing lost or posted twice", async () => {
    const fleet = await startFleet("skew", [{ label: "A" }, { label: "B", clockOffset: "+40s" }, { label: "C", clockOffset: "-40s" }]);
    try {
      const clients = new Clients(fleet);
      const accounts = await fleet.accounts(6);
      // A slow platform keeps each post running (and its lease held) for a while.
      await slowPlatform(fleet, 500);
      // Posts spread over all three, a worker per account.
      await clients.load(accounts, ["A", "B", "C"], () => clients.posts.length < POSTS);
      const claims = await fleet.store.all<{ subject_id: string; n: number }>(
        "SELECT subject_id, count(*) AS n FROM events WHERE type = 'action.updated' AND data LIKE '%\"status\":\"running\"%' GROUP BY subject_id ORDER BY n DESC LIMIT 1",
      );
      const verdict = await judge(fleet, clients, {
        fault: "B's clock 40 s ahead, C's 40 s behind",
        notes: [`most times one action went to running: ${claims[0]?.n ?? 0}`],
      });
      const table = report("skewed-clocks", verdict);
      console.log(table);
      expect(verdict.violations, table).toEqual([]);
    } finally {
      await fleet.stop();
    }
  });
});
