#!/usr/bin/env node
/**
 * `npm run test:faults [-- vitest args]`: the fault-injection suite (test/faults,
 * vitest.faults.config.mts) — three real coordinators on a real PostgreSQL, each through a TCP
 * proxy the test controls, under the faults of DESIGN §11 ("Faults a fleet meets").
 *
 * Installs what is missing — Debian's PostgreSQL server (scripts/postgres/cluster.mjs) and
 * Debian's `faketime` (libfaketime, for the coordinators whose clocks are off) by apt-get when
 * root — builds dist/ when it is missing (the coordinators are `node dist/cli.js serve`), starts a
 * throw-away cluster, migrates a template database with the product's own `PostgresAdapter`, and
 * runs vitest with `ACTION_SERVICE_TEST_DATABASE_URL` naming the template: each fleet gets a fresh
 * copy of it (the scenario that restarts PostgreSQL starts a cluster of its own, as the others'
 * fleets share this one). The cluster is deleted at the end, whatever the outcome, and on
 * SIGINT/SIGTERM.
 */
import { installFakeTime } from "../postgres/faketime.mjs";
import { runVitestOnCluster } from "../postgres/vitest-on-cluster.mjs";

await runVitestOnCluster({ name: "faults", config: "vitest.faults.config.mts", prepare: installFakeTime });
