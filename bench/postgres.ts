/**
 * PostgreSQL for the benchmarks: a throw-away cluster started with the project's own scripts
 * (scripts/postgres/cluster.mjs, as `npm run test:postgres` does), the server installed first when
 * it is missing. `BENCH_DATABASE=postgres` runs (a)–(d), (g) and (m) on it; (l) always uses one.
 */
import { randomBytes } from "node:crypto";
import { createDatabase, installPostgres, startCluster, type Cluster } from "../scripts/postgres/cluster.mjs";

/** Which store the bench's main service uses: `BENCH_DATABASE` (sqlite, the default, or postgres). */
export const BENCH_DATABASE = process.env.BENCH_DATABASE === "postgres" ? "postgres" : "sqlite";

export interface BenchPostgres {
  /** A new empty database on the cluster: the environment a service (or several) needs to share it. */
  database(): Promise<{ ACTION_SERVICE_DATABASE_URL: string; ACTION_SERVICE_MASTER_KEY: string }>;
  stop(): Promise<void>;
}

let databases = 0;

export async function startBenchPostgres(): Promise<BenchPostgres> {
  installPostgres();
  const cluster: Cluster = await startCluster();
  return {
    async database() {
      const url = await createDatabase(cluster.url, `bench_${process.pid}_${++databases}`);
      return { ACTION_SERVICE_DATABASE_URL: url, ACTION_SERVICE_MASTER_KEY: randomBytes(32).toString("hex") };
    },
    stop: () => cluster.stop(),
  };
}
