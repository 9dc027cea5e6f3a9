#!/usr/bin/env node
/**
 * `npm run test:postgres [-- vitest args]`: the store's suites again, on PostgreSQL
 * (vitest.postgres.config.mts), on a throw-away cluster with a migrated template database
 * (scripts/postgres/vitest-on-cluster.mjs): each store a test opens is a fresh copy of it
 * (test/helpers/database.ts).
 */
import { runVitestOnCluster } from "./vitest-on-cluster.mjs";

await runVitestOnCluster({ name: "postgres", config: "vitest.postgres.config.mts" });
