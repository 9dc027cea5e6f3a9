/**
 * (p) The coordination ceiling: actions/s through the whole path — REST create, claim, run, finish,
 * events — when the platform work is next to nothing, with N = 1, 2, 3 coordinators on PostgreSQL
 * and on SQLite (several `serve`s sharing one data dir). The action is the cheapest honest one:
 * `browser_steps` needs at least one step, so it is one that reads the page it is on
 * (`extract_text` of `h1`), after the driver's own check that the account is signed in (it opens
 * the feed, in the account's kept page). Every coordinator's browsers are on one
 * `action-service browser-server`, so browser capacity does not grow with N. `BENCH_CEILING_CLIENTS`
 * (16) accounts, connected and warmed, each a client with one action in flight at a time, created
 * through the coordinators in turn, for `BENCH_CEILING_SECONDS` (20) after a warm-up of 5 s.
 */
import { runAction, withFleet, type Fleet } from "./fleet.js";
import type { BenchDatabase } from "./postgres.js";

const CLIENTS = Number(process.env.BENCH_CEILING_CLIENTS ?? 16);
const SECONDS = Number(process.env.BENCH_CEILING_SECONDS ?? 20);
const WARM_UP_SECONDS = 5;
const TRIVIAL = { steps: [{ extract_text: "h1", as: "heading" }] };

export interface CeilingRun {
  store: "postgres" | "sqlite";
  coordinators: number;
  actionsPerSecond: number;
  /** Node CPU of all coordinators per action (ms). */
  cpuMsPerAction: number;
  /** Creates sent again after a 503. */
  resent: number;
}

/** Every client runs trivial actions back to back until `until`; how many ended and sends repeated. */
async function drive(fleet: Fleet, ids: readonly string[], until: number): Promise<{ done: number; resent: number }> {
  let done = 0;
  let resent = 0;
  await Promise.all(
    ids.map(async (id) => {
      while (performance.now() < until) {
        resent += await runAction(fleet.next(), fleet.key, id, "browser_steps", TRIVIAL);
        done += 1;
      }
    }),
  );
  return { done, resent };
}

/** One set-up: `count` coordinators on `database` (none: one shared SQLite data dir), all on the browser server `browsers`. */
export async function ceiling(sandboxUrl: string, browsers: string, count: number, database?: BenchDatabase): Promise<CeilingRun> {
  const store = database ? "postgres" : "sqlite";
  return withFleet({ sandboxUrl, count, browsers, label: `p-${store}-${count}`, env: { ACTION_SERVICE_MAX_CONCURRENT_ACTIONS: String(CLIENTS) }, ...(database ? { database } : {}) }, async (fleet) => {
    const ids = await fleet.accounts(CLIENTS);
    await Promise.all(ids.map((id) => runAction(fleet.next(), fleet.key, id, "connect")));
    await drive(fleet, ids, performance.now() + WARM_UP_SECONDS * 1000);
    const cpuBefore = fleet.cpuMs();
    const started = performance.now();
    const { done, resent } = await drive(fleet, ids, started + SECONDS * 1000);
    // Counted to the last one's end: every client's last action started within the window.
    const seconds = (performance.now() - started) / 1000;
    const cpuMs = fleet.cpuMs().reduce((sum, used, i) => sum + used - cpuBefore[i]!, 0);
    console.log(`(p) ${store}, ${count} coordinators: ${(done / seconds).toFixed(2)} actions/s`);
    return { store, coordinators: count, actionsPerSecond: done / seconds, cpuMsPerAction: cpuMs / done, resent };
  });
}
