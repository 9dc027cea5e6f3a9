import { defineConfig } from "vitest/config";
import { FAULT_FILES, SHARED } from "./test/suites.js";

/**
 * `npm run test:faults`: the fault-injection suite (scripts/faults/test.mjs starts a throw-away
 * PostgreSQL cluster and sets ACTION_SERVICE_TEST_DATABASE_URL to a migrated template, and where
 * the cluster's data dir and programs are for a restart). Two files at a time: a scenario spends
 * most of its time waiting out its fault (a freeze, a lease, a `?wait`), and one at a time took
 * 7½ minutes; each has its own fleet and database, and compares its fleet's throughput during its
 * fault with its own before, measured beside the same neighbour.
 */
export default defineConfig({
  test: {
    ...SHARED,
    include: FAULT_FILES.map((folder) => `${folder}/*.test.ts`),
    maxWorkers: 2,
    testTimeout: 180_000,
  },
});
