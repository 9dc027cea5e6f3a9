/**
 * PostgreSQL for the benchmarks: a throw-away cluster started with the project's own scripts
 * (scripts/postgres/cluster.mjs, as `npm run test:postgres` does), the server installed first when
 * it is missing. `BENCH_DATABASE=postgres` runs (a)–(d), (g) and (m) on it; (l) always uses one.
 *
 * `{ counted: true }` makes the cluster the fleet rows' (bench/fleet-*.ts): PostgreSQL's own
 * statement count (`pg_stat_statements`, preloaded) and, unless `BENCH_PG_FSYNC=off`, fsync,
 * synchronous commit and full-page writes back on (the test cluster turns them off), as a real
 * deployment runs. Set through `ALTER SYSTEM` and a restart, so the test scripts stay as they are.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { createDatabase, databaseUrl, installPostgres, startCluster, type Cluster } from "../scripts/postgres/cluster.mjs";

/** Which store the bench's main service uses: `BENCH_DATABASE` (sqlite, the default, or postgres). */
export const BENCH_DATABASE = process.env.BENCH_DATABASE === "postgres" ? "postgres" : "sqlite";

/** What a service (or several sharing it) needs to use one database. */
export type BenchDatabase = { ACTION_SERVICE_DATABASE_URL: string; ACTION_SERVICE_MASTER_KEY: string };

export interface BenchPostgres {
  /** A new empty database on the cluster: the environment a service (or several) needs to share it. */
  database(): Promise<BenchDatabase>;
  /**
   * Statements PostgreSQL has run in `database` so far, by its own count: `sum(calls)` of
   * `pg_stat_statements` for that database (top-level statements, BEGIN, COMMIT, LISTEN and
   * other utility statements included). Only on a `{ counted: true }` cluster.
   */
  statements(database: BenchDatabase): Promise<number>;
  /** Entries `pg_stat_statements` evicted so far (a count missing some statements when not 0). */
  evicted(): Promise<number>;
  /** `statements` by statement: each normalized text of `pg_stat_statements` with its calls so far (to break a count down). */
  statementsByText(database: BenchDatabase): Promise<Map<string, number>>;
  /** Whether the cluster syncs its commits to disk. */
  readonly durable: boolean;
  stop(): Promise<void>;
}

let databases = 0;

export async function startBenchPostgres(options: { counted?: boolean } = {}): Promise<BenchPostgres> {
  installPostgres();
  const cluster: Cluster = await startCluster();
  const durable = options.counted === true && process.env.BENCH_PG_FSYNC !== "off";
  // The bench's own queries go to the `postgres` database: counted under its id, not a measured one's.
  let admin: pg.Client | undefined;
  try {
    if (options.counted) {
      await settle(cluster.url, [
        "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'",
        // Its own settings are unknown until it is loaded; their defaults do (5,000 entries, utility statements tracked).
        ...(durable ? ["ALTER SYSTEM SET fsync = on", "ALTER SYSTEM SET synchronous_commit = on", "ALTER SYSTEM SET full_page_writes = on"] : []),
      ]);
      await cluster.restart();
      admin = new pg.Client({ connectionString: databaseUrl(cluster.url, "postgres") });
      admin.on("error", () => undefined);
      await admin.connect();
      await admin.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    }
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  const counter = (): pg.Client => {
    if (!admin) throw new Error("this bench cluster does not count statements: start it with { counted: true }");
    return admin;
  };
  return {
    durable,
    async database() {
      const url = await createDatabase(cluster.url, `bench_${process.pid}_${++databases}`);
      return { ACTION_SERVICE_DATABASE_URL: url, ACTION_SERVICE_MASTER_KEY: randomBytes(32).toString("hex") };
    },
    async statements(database) {
      const name = decodeURIComponent(new URL(database.ACTION_SERVICE_DATABASE_URL).pathname.slice(1));
      const result = await counter().query<{ calls: string }>(
        "SELECT coalesce(sum(calls), 0)::text AS calls FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)",
        [name],
      );
      return Number(result.rows[0]!.calls);
    },
    async statementsByText(database) {
      const name = decodeURIComponent(new URL(database.ACTION_SERVICE_DATABASE_URL).pathname.slice(1));
      const result = await counter().query<{ query: string; calls: string }>(
        "SELECT query, sum(calls)::text AS calls FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) GROUP BY query",
        [name],
      );
      return new Map(result.rows.map((row) => [row.query, Number(row.calls)]));
    },
    async evicted() {
      return Number((await counter().query<{ dealloc: string }>("SELECT dealloc::text FROM pg_stat_statements_info")).rows[0]!.dealloc);
    },
    async stop() {
      await admin?.end().catch(() => undefined);
      await cluster.stop();
    },
  };
}

async function settle(url: string, statements: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl(url, "postgres") });
  client.on("error", () => undefined);
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end().catch(() => undefined);
  }
}
