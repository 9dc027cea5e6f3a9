import { configDefaults, defineConfig } from "vitest/config";

/**
 * `npm run test:postgres`: the suites that run again with their stores on PostgreSQL
 * (scripts/postgres/test.mjs starts a throw-away cluster and sets ACTION_SERVICE_TEST_DATABASE_URL
 * to a migrated template; test/helpers/database.ts copies it for every store a test opens).
 */
export default defineConfig({
  test: {
    include: [
      "test/store/**/*.test.ts",
      "test/engine/**/*.test.ts",
      "test/execution/**/*.test.ts",
      "test/api/**/*.test.ts",
      "test/mcp/**/*.test.ts",
      "test/postgres/**/*.test.ts",
      "test/chaos/**/*.test.ts",
      // Every role × every operation over REST and MCP, nothing written by a refusal.
      "test/security/access-matrix.test.ts",
    ],
    exclude: [
      ...configDefaults.exclude,
      // The real-platform suites need MediaWiki and Ghost installed: `npm run test:platforms`.
      "test/platforms/**",
      // SQLite's own: its files, locks and journal, another program holding its write lock.
      "test/store/other-programs.test.ts",
      "test/store/read-cache.test.ts",
      "test/store/statements.test.ts",
      "test/engine/busy-database.test.ts",
      // Processes and live services that open the data dir's SQLite file whatever this run sets:
      // on PostgreSQL they would test SQLite again.
      "test/execution/**",
      "test/mcp/sandbox.test.ts",
      "test/mcp/stdio.test.ts",
      "test/mcp/launch-config.test.ts",
    ],
    // Browser tests share one Chromium per file; two cores means two files at a time.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
