#!/usr/bin/env node
/**
 * `npm run test:postgres [-- vitest args]`: the store's suites again, on PostgreSQL
 * (vitest.postgres.config.mts), on a throw-away cluster with a migrated template database
 * (scripts/postgres/vitest-on-cluster.mjs): each store a test opens is a fresh copy of it
 * (test/helpers/database.ts). Debian's `pgbouncer` and `faketime` are installed when missing (as the
 * server is).
 */
import { installFakeTime } from "./faketime.mjs";
import { installPgbouncer } from "./pgbouncer.mjs";
import { runVitestOnCluster } from "./vitest-on-cluster.mjs";

// test/postgres/pgbouncer.test.ts runs coordinators through Debian's PgBouncer, and
// test/postgres/skew.test.ts coordinators with their clocks off under libfaketime.
await runVitestOnCluster({
  name: "postgres",
  config: "vitest.postgres.config.mts",
  prepare: () => {
    installPgbouncer();
    installFakeTime();
  },
});
