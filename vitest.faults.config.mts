import { defineConfig } from "vitest/config";
import { FAULT_FILES, SHARED } from "./test/suites.js";

/**
 * `npm run test:faults`: the fault-injection suite (scripts/faults/test.mjs starts a throw-away
 * PostgreSQL cluster and sets ACTION_SERVICE_TEST_DATABASE_URL to a migrated template, and where
 * the cluster's data dir and programs are for a restart). One file at a time: each scenario
 * measures the fleet's throughput before and during its fault, which another scenario's fleet
 * beside it would move.
 */
export default defineConfig({
  test: {
    ...SHARED,
    include: FAULT_FILES.map((folder) => `${folder}/*.test.ts`),
    fileParallelism: false,
    maxWorkers: 1,
    testTimeout: 180_000,
  },
});
