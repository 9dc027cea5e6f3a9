/**
 * (l′) Coordinators sharing one browser server: browser capacity stays constant (one
 * `action-service browser-server`, every coordinator's `BROWSER_WS_ENDPOINTS` pointing at it), so
 * what 3 coordinators do ÷ what 1 does is the coordination's cost or gain alone. Two fleets on two
 * databases of one PostgreSQL cluster, both up for the whole run: 1 coordinator, and 3. Each has
 * 16 accounts, connected and warmed by a post; then rounds alternate between them (1, 3, 3, 1, …,
 * so that neither side always goes first while the machine's speed drifts), each round 16
 * accounts posting twice, all at once, every post created through the next coordinator in turn.
 */
import { runAction, startFleet, unique, type Fleet } from "./fleet.js";
import type { BenchPostgres } from "./postgres.js";

export const ACCOUNTS = 16;
export const PER_ACCOUNT = 2;
export const ROUNDS = Math.max(4, Number(process.env.BENCH_SHARED_ROUNDS ?? 4));

export interface SharedBrowserSide {
  coordinators: number;
  actionsPerSecond: number;
  /** Each round's actions/s, in order. */
  rounds: number[];
  /** Node CPU of all coordinators per action (ms). */
  cpuMsPerAction: number;
  /** Posts sent again after a 503. */
  resent: number;
}

async function round(fleet: Fleet, ids: readonly string[]): Promise<{ seconds: number; cpuMs: number; resent: number }> {
  const cpuBefore = fleet.cpuMs();
  const started = performance.now();
  const resent = await Promise.all(
    ids.map(async (id) => {
      let again = 0;
      for (let i = 0; i < PER_ACCOUNT; i++) again += await runAction(fleet.next(), fleet.key, id, "post", { text: unique("shared browser") });
      return again;
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { seconds, cpuMs: fleet.cpuMs().reduce((sum, used, i) => sum + used - cpuBefore[i]!, 0), resent: resent.reduce((sum, n) => sum + n, 0) };
}

export async function sharedBrowser(postgres: BenchPostgres, sandboxUrl: string, browsers: string): Promise<{ one: SharedBrowserSide; three: SharedBrowserSide }> {
  const fleets: Fleet[] = [];
  try {
    for (const count of [1, 3]) fleets.push(await startFleet({ sandboxUrl, count, database: await postgres.database(), browsers, label: `l2-${count}` }));
    const accounts = await Promise.all(
      fleets.map(async (fleet) => {
        const ids = await fleet.accounts(ACCOUNTS);
        await Promise.all(ids.map((id) => runAction(fleet.next(), fleet.key, id, "connect")));
        await Promise.all(ids.map((id) => runAction(fleet.next(), fleet.key, id, "post", { text: unique("warm-up") })));
        return ids;
      }),
    );
    const totals = fleets.map(() => ({ seconds: 0, cpuMs: 0, resent: 0, rounds: [] as number[] }));
    for (let r = 0; r < ROUNDS; r++) {
      // 1, 3, 3, 1, 1, 3, …: each side goes first in half the pairs.
      for (const side of r % 2 === 0 ? [0, 1] : [1, 0]) {
        const result = await round(fleets[side]!, accounts[side]!);
        const total = totals[side]!;
        total.seconds += result.seconds;
        total.cpuMs += result.cpuMs;
        total.resent += result.resent;
        total.rounds.push((ACCOUNTS * PER_ACCOUNT) / result.seconds);
        console.log(`(l′) round ${r + 1}, ${fleets[side]!.coordinators.length} coordinators: ${total.rounds.at(-1)!.toFixed(2)} actions/s`);
      }
    }
    const actions = ACCOUNTS * PER_ACCOUNT * ROUNDS;
    const side = (i: number): SharedBrowserSide => ({
      coordinators: fleets[i]!.coordinators.length,
      actionsPerSecond: actions / totals[i]!.seconds,
      rounds: totals[i]!.rounds,
      cpuMsPerAction: totals[i]!.cpuMs / actions,
      resent: totals[i]!.resent,
    });
    return { one: side(0), three: side(1) };
  } catch (error) {
    for (const proc of fleets.flatMap((fleet) => fleet.coordinators)) console.log(`(l′) serve ${proc.url}: ${proc.output().slice(-2000)}`);
    throw error;
  } finally {
    await Promise.all(fleets.map((fleet) => fleet.stop()));
  }
}
