/**
 * Figure (g), the read path: `GET /v1/actions/{id}` requests per second ÷ `GET /healthz` on the same
 * server, in one run, each driven by autocannon from a process of its own (50 connections), so the
 * load generator never shares the service's event loop. healthz is the framework's own floor: the
 * same HTTP server, router and client, with no key, no store and no JSON of an action.
 */
import { fork } from "node:child_process";
import { join } from "node:path";
import type { LiveService } from "../test/helpers/live-service.js";

export interface LoadResult { requestsPerSecond: number; p99Ms: number; non2xx: number }
export interface ReadPath { action: LoadResult; healthz: LoadResult; ratio: number }

const CONNECTIONS = 50;
const SECONDS = Number(process.env.BENCH_READ_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_READ_ROUNDS ?? 5);

/** One autocannon run in a child process. */
function load(url: string, headers: Record<string, string>): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = fork(join(import.meta.dirname, "read-path-load.ts"), [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
    child.once("message", (result: LoadResult) => resolve(result));
    child.once("exit", (code) => (code === 0 ? undefined : reject(new Error(`the load process exited with ${code}`))));
    child.send({ url, headers, connections: CONNECTIONS, seconds: SECONDS });
  });
}

/**
 * Alternating rounds of healthz and the action. The figure is the median of each round's ratio:
 * this 2-core machine's speed drifts by a third from one 5 s run to the next (the load generator
 * shares it), and a ratio of two runs side by side cancels most of that drift.
 */
export async function readPath(live: LiveService, actionId: string): Promise<ReadPath> {
  const action: LoadResult[] = [];
  const healthz: LoadResult[] = [];
  const auth = { authorization: `Bearer ${live.key}` };
  // A first short run warms both paths (JIT, statements) before anything counts.
  await load(`${live.url}/v1/actions/${actionId}`, auth);
  for (let round = 0; round < ROUNDS; round++) {
    healthz.push(await load(`${live.url}/healthz`, {}));
    action.push(await load(`${live.url}/v1/actions/${actionId}`, auth));
  }
  const ratios = action.map((result, round) => ({ round, ratio: result.requestsPerSecond / healthz[round]!.requestsPerSecond }));
  const { round, ratio } = [...ratios].sort((a, b) => a.ratio - b.ratio)[Math.floor(ratios.length / 2)]!;
  return { action: action[round]!, healthz: healthz[round]!, ratio };
}
