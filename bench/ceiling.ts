/**
 * (p) The coordination ceiling: actions/s through the whole path — REST create, claim, run, finish,
 * events — when the platform work is next to nothing, with N = 1, 2, 3 coordinators on PostgreSQL
 * and on SQLite (several `serve`s sharing one data dir). The action is the cheapest honest one:
 * `browser_steps` needs at least one step, so it is one that reads the page it is on
 * (`extract_text` of `h1`), after the driver's own check that the account is signed in (it opens
 * the feed, in the account's kept page). Every coordinator's browsers are on one
 * `action-service browser-server`, so browser capacity does not grow with N.
 *
 * Every fleet of both stores is up for the whole measure, each with `BENCH_CEILING_CLIENTS` (16)
 * accounts, connected, each a client with one action in flight at a time, created through the
 * fleet's coordinators in turn. The fleets (and the floors below) take turns in one order across
 * both stores — PostgreSQL 1, SQLite 1, PostgreSQL 2, …, then back — a round of
 * `BENCH_CEILING_SECONDS` (7) each: the machine's speed drifts by tens of percent over minutes, so
 * N ÷ 1 and PostgreSQL ÷ SQLite are each read across the same minutes, and no side always goes
 * first. Eight sides of 7 s come back to each within the 60 s a kept page stays open idle. First
 * unmeasured rounds for `BENCH_CEILING_WARM_UP_SECONDS` (30) each — a coordinator's first seconds
 * are its code being compiled (three fresh processes compile three times), not coordination — then
 * `BENCH_CEILING_ROUNDS` (6) measured ones.
 *
 * Its floor, in the same rounds: the same service as three that share nothing — three single
 * coordinators, each on a store of its own with a third of the accounts, on the same browser
 * server. What three ÷ one is there is what splitting the same work over three processes costs
 * this machine (two cores: more processes to schedule, three runtimes to keep warm) with no
 * coordination at all; a fleet of three ÷ one is read beside it.
 */
import { runAction, startFleet, type Fleet } from "./fleet.js";
import type { BenchDatabase } from "./postgres.js";

const CLIENTS = Number(process.env.BENCH_CEILING_CLIENTS ?? 16);
const SECONDS = Number(process.env.BENCH_CEILING_SECONDS ?? 7);
const ROUNDS = Math.max(2, Number(process.env.BENCH_CEILING_ROUNDS ?? 6));
const WARM_UP_SECONDS = Number(process.env.BENCH_CEILING_WARM_UP_SECONDS ?? 30);
const COUNTS = [1, 2, 3] as const;
const STORES = ["postgres", "sqlite"] as const;
type Store = (typeof STORES)[number];
const TRIVIAL = { steps: [{ extract_text: "h1", as: "heading" }] };

export interface CeilingRun {
  store: "postgres" | "sqlite";
  coordinators: number;
  /** The floor: that many single coordinators sharing nothing, not a fleet. */
  apart: boolean;
  actionsPerSecond: number;
  /** Each round's actions/s, in order. */
  rounds: number[];
  /** Node CPU of all coordinators per action (ms). */
  cpuMsPerAction: number;
  /** Creates sent again after a 503. */
  resent: number;
}

/** What one side of the measure drives: each fleet with the accounts created (and driven) through it. */
type Side = { fleet: Fleet; ids: string[] }[];

/** Every client runs trivial actions back to back until `until`, through its account's fleet; how many ended and sends repeated. */
async function drive(side: Side, until: number): Promise<{ done: number; resent: number }> {
  let done = 0;
  let resent = 0;
  await Promise.all(
    side.flatMap(({ fleet, ids }) =>
      ids.map(async (id) => {
        while (performance.now() < until) {
          resent += await runAction(fleet.next(), fleet.key, id, "browser_steps", TRIVIAL);
          done += 1;
        }
      }),
    ),
  );
  return { done, resent };
}

/** The Node CPU each coordinator of the side has used so far. */
const cpuOf = (side: Side): number[] => side.flatMap(({ fleet }) => fleet.cpuMs());

/** One round of a side: actions ended ÷ the time until the last one started in the window ended, with the coordinators' CPU. */
async function round(side: Side): Promise<{ done: number; seconds: number; cpuMs: number; resent: number }> {
  const cpuBefore = cpuOf(side);
  const started = performance.now();
  const { done, resent } = await drive(side, started + SECONDS * 1000);
  const seconds = (performance.now() - started) / 1000;
  return { done, seconds, cpuMs: cpuOf(side).reduce((sum, used, i) => sum + used - cpuBefore[i]!, 0), resent };
}

/**
 * Every side of both stores — PostgreSQL's fleets (a fresh database each, from `database()`) and
 * SQLite's (a data dir each, its coordinators sharing it), of 1, 2 and 3 coordinators, and each
 * store's floor — all on the browser server `browsers`, up together and taking turns in one
 * alternating order: PostgreSQL ÷ SQLite is then read across the same minutes, as N ÷ 1 is.
 */
export async function ceilings(sandboxUrl: string, browsers: string, database: () => Promise<BenchDatabase>): Promise<CeilingRun[]> {
  const fleets: Fleet[] = [];
  const start = async (store: Store, count: number, label: string): Promise<Fleet> => {
    const fleet = await startFleet({ sandboxUrl, count, browsers, label, env: { ACTION_SERVICE_MAX_CONCURRENT_ACTIONS: String(CLIENTS) }, ...(store === "postgres" ? { database: await database() } : {}) });
    fleets.push(fleet);
    return fleet;
  };
  /** `clients` accounts made and connected through `fleet`. */
  const connected = async (fleet: Fleet, clients: number): Promise<string[]> => {
    const ids = await fleet.accounts(clients);
    await Promise.all(ids.map((id) => runAction(fleet.next(), fleet.key, id, "connect")));
    return ids;
  };
  try {
    // Each store's fleets of 1, 2 and 3 coordinators, then its floor: three of one, a third of the clients each.
    const measured: { store: Store; coordinators: number; apart: boolean }[] = COUNTS.flatMap((coordinators) => STORES.map((store) => ({ store, coordinators, apart: false })));
    measured.push(...STORES.map((store) => ({ store, coordinators: 3, apart: true })));
    const sides: Side[] = [];
    for (const { store, coordinators, apart } of measured) {
      if (!apart) {
        const fleet = await start(store, coordinators, `p-${store}-${coordinators}`);
        sides.push([{ fleet, ids: await connected(fleet, CLIENTS) }]);
        continue;
      }
      const side: Side = [];
      for (let i = 0; i < coordinators; i++) {
        const fleet = await start(store, 1, `p-${store}-apart-${i + 1}`);
        side.push({ fleet, ids: await connected(fleet, Math.floor(CLIENTS / coordinators) + (i < CLIENTS % coordinators ? 1 : 0)) });
      }
      sides.push(side);
    }
    // The warm-up is rounds too, in turn: a side left idle for a minute while the others warmed
    // would find its kept pages closed (they close after 60 s idle) and start its first round cold.
    const warmUpRounds = Math.ceil(WARM_UP_SECONDS / SECONDS);
    const totals = sides.map(() => ({ done: 0, seconds: 0, cpuMs: 0, resent: 0, rounds: [] as number[] }));
    const forward = sides.map((_, i) => i);
    for (let r = -warmUpRounds; r < ROUNDS; r++) {
      for (const i of (r + warmUpRounds) % 2 === 0 ? forward : [...forward].reverse()) {
        const result = await round(sides[i]!);
        if (r < 0) continue;
        const total = totals[i]!;
        total.done += result.done;
        total.seconds += result.seconds;
        total.cpuMs += result.cpuMs;
        total.resent += result.resent;
        total.rounds.push(result.done / result.seconds);
        const { store, coordinators, apart } = measured[i]!;
        console.log(`(p) ${store}, round ${r + 1}, ${coordinators} ${apart ? "single coordinators sharing nothing (floor)" : "coordinators"}: ${(result.done / result.seconds).toFixed(2)} actions/s`);
      }
    }
    return totals.map((total, i) => ({
      ...measured[i]!,
      actionsPerSecond: total.done / total.seconds,
      rounds: total.rounds,
      cpuMsPerAction: total.cpuMs / total.done,
      resent: total.resent,
    }));
  } finally {
    await Promise.all(fleets.map((fleet) => fleet.stop()));
  }
}
