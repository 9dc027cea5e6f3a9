import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sleep } from "../chaos/kill-support.js";
import { eventually } from "../helpers/wait.js";
import { Clients } from "./clients.js";
import { slowPlatform, startFleet, startOwnCluster, type Fleet, type OwnCluster } from "./fleet.js";
import { judge, report } from "./verdict.js";

const BEFORE_MS = 8_000;
/** After the restart, the load goes on this long: the window whose throughput is compared with before. */
const AFTER_MS = 10_000;

/** `pg_ctl restart -m fast` of a cluster (as the `postgres` user when root, as the cluster was started). */
function restartPostgres(cluster: OwnCluster): number {
  const { dir, binDir } = cluster;
  const args = ["restart", "-D", join(dir, "data"), "-m", "fast", "-w", "-t", "60", "-l", join(dir, "server.log")];
  const asRoot = typeof process.getuid === "function" && process.getuid() === 0;
  const [command, commandArgs] = asRoot ? ["runuser", ["-u", "postgres", "--", join(binDir, "pg_ctl"), ...args]] : [join(binDir, "pg_ctl"), args];
  const started = Date.now();
  const result = spawnSync(command, commandArgs, { cwd: "/", stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
  if (result.status !== 0) throw new Error(`pg_ctl restart failed (exit ${result.status ?? result.signal}): ${result.stdout}${result.stderr}`);
  return Date.now() - started;
}

/** How long after `from` each member answers a request that reads the database again. */
async function answeringAgain(fleet: Fleet, from: number): Promise<Record<string, number | string>> {
  const times: Record<string, number | string> = {};
  await Promise.all(
    fleet.members.map(async (member) => {
      try {
        await eventually(async () => member.alive() && (await fetch(`${member.url}/v1/actions?limit=1`, { headers: fleet.headers() })).status === 200, {
          what: `${member.label} to answer again`,
          timeoutMs: 30_000,
          everyMs: 100,
          errorsAreNotYet: true,
          abandon: () => (member.alive() ? undefined : "it exited"),
        });
        times[member.label] = Date.now() - from;
      } catch (error) {
        times[member.label] = (error as Error).message;
      }
    }),
  );
  return times;
}

// PostgreSQL restarts (a minor upgrade) while posts are in flight: every connection of every
// coordinator is cut at once. Each must survive it, answer again, and lose or repeat nothing.
// A cluster of its own: the restart would cut the other scenarios' fleets too.
describe("PostgreSQL restarted with posts in flight", () => {
  it("ends no coordinator; each answers again; nothing is lost, posted twice or interrupted", async () => {
    const cluster = await startOwnCluster();
    const fleet = await startFleet("restart", [{ label: "A" }, { label: "B" }, { label: "C" }], { databaseUrl: cluster.databaseUrl }).catch(async (error: unknown) => {
      await cluster.stop();
      throw error;
    });
    const started = Date.now();
    const phase = (name: string): void => console.log(`[postgres-restart] ${name} at ${((Date.now() - started) / 1000).toFixed(1)} s`);
    try {
      const clients = new Clients(fleet);
      const accounts = await fleet.accounts(4);
      await clients.signIn(accounts, ["A", "B", "C"]);
      await slowPlatform(fleet, 300);
      let loading = true;
      const loadStart = Date.now();
      const load = clients.load(accounts, ["A", "B", "C"], () => loading);
      await sleep(BEFORE_MS);
      const inFlight = await fleet.store.all<{ n: number }>("SELECT count(*) AS n FROM actions WHERE status = 'running'");
      phase("restarting PostgreSQL");
      const restartAt = Date.now();
      const restartMs = restartPostgres(cluster);
      await fleet.reconnect();
      const back = await answeringAgain(fleet, restartAt);
      phase("answering again");
      await sleep(Math.max(0, restartAt + AFTER_MS - Date.now()));
      const afterEnd = Date.now();
      loading = false;
      await load;
      phase("load ended");
      const before = clients.endedBetween(loadStart, restartAt) / ((restartAt - loadStart) / 1000);
      const after = clients.endedBetween(restartAt, afterEnd) / ((afterEnd - restartAt) / 1000);
      const verdict = await judge(fleet, clients, {
        fault: `pg_ctl restart -m fast (${restartMs} ms) with ${inFlight[0]?.n ?? 0} posts running`,
        throughput: { before, during: after },
        notes: [`answering again after the restart began (ms): ${Object.entries(back).map(([label, time]) => `${label} ${time}`).join(", ")}`],
        violations: Object.entries(back).filter(([, time]) => typeof time === "string").map(([label, time]) => `coordinator ${label} does not answer after the restart: ${time}`),
      });
      const table = report("postgres-restart", verdict);
      console.log(table);
      expect(verdict.violations, table).toEqual([]);
      expect(fleet.members.filter((member) => !member.alive()).map((member) => member.label), table).toEqual([]);
    } finally {
      await fleet.stop();
      await cluster.stop();
    }
  });
});
