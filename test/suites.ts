import { configDefaults, type TestProjectInlineConfiguration, type ViteUserConfig } from "vitest/config";
import { SlowFirstSequencer } from "./sequencer.js";

/**
 * The test suites and what runs where, for the three vitest configurations: `npm test`
 * (vitest.config.ts), `npm run test:postgres` (vitest.postgres.config.mts) and `npm run
 * test:platforms` (vitest.platforms.config.mts). docs/testing.md says why each rule is as it is.
 */

/** The real-platform suites: they need MediaWiki and Ghost installed (`npm run test:platforms`). */
export const PLATFORM_FILES = ["test/platforms/**"];

/** Suites that need a PostgreSQL cluster: they run under `npm run test:postgres` only. */
export const POSTGRES_ONLY_FILES = ["test/postgres/**"];

/** The fault-injection suite (`npm run test:faults`): a fleet on PostgreSQL through proxies the test controls, one file at a time. */
export const FAULT_FILES = ["test/faults/**"];

/**
 * Tests that load every core on purpose (CPU hogs beside serve). They run after the rest, one at a
 * time: run beside another test, their hogs would slow it as much as the code under test, and that
 * test's verdict would depend on what happened to run next to it.
 */
export const RUN_ALONE_FILES = ["test/events/delivery-lock.test.ts", "test/execution/busy-machine.test.ts"];

/**
 * `npm run test:postgres`: every suite that exercises the store — its repositories, the engine
 * (lifecycle, leases, recovery, the outbox), and REST and MCP end to end — runs again with its
 * stores on PostgreSQL (test/helpers/database.ts gives each a fresh copy of a migrated template).
 * Suites about things other than the store (the browser, the sandbox, pages, the inbox's parsing,
 * the CLI) run on SQLite only: their store is the same code on either, proven by these.
 */
export const POSTGRES_FILES = [
  "test/store/**/*.test.ts",
  "test/engine/**/*.test.ts",
  "test/api/**/*.test.ts",
  "test/mcp/**/*.test.ts",
  "test/postgres/**/*.test.ts",
  "test/chaos/**/*.test.ts",
  // Every role × every operation over REST and MCP, nothing written by a refusal.
  "test/security/access-matrix.test.ts",
];

/** Of `POSTGRES_FILES`, those about SQLite itself or that open the data dir's SQLite file whatever the run sets. */
export const SQLITE_ONLY_FILES = [
  // SQLite's own: its files, locks and journal, another program holding its write lock.
  "test/store/other-programs.test.ts",
  "test/store/read-cache.test.ts",
  "test/store/statements.test.ts",
  "test/engine/busy-database.test.ts",
  // Processes and live services that open the data dir's SQLite file: on PostgreSQL they would test SQLite again.
  "test/mcp/sandbox.test.ts",
  "test/mcp/stdio.test.ts",
  "test/mcp/launch-config.test.ts",
];

/** Settings every suite shares. */
export const SHARED: NonNullable<ViteUserConfig["test"]> = {
  testTimeout: 60_000,
  hookTimeout: 120_000,
  // A crashed or hung worker is reported as such, not waited for without end.
  teardownTimeout: 60_000,
  sequence: { sequencer: SlowFirstSequencer },
  coverage: {
    provider: "v8",
    include: ["src/**/*.ts"],
    reporter: ["text-summary", "json-summary"],
    reportsDirectory: "test-artifacts/coverage",
    // A red run still says how much of src/ it reached.
    reportOnFailure: true,
  },
};

/**
 * Four files at a time on two cores: a test file spends about half its time waiting (on pages,
 * processes, PostgreSQL), so two workers left the cores idle half the run (measured: 52 % of two
 * cores busy over `npm test`). Four paid only once a worker stopped importing `src/` afresh for
 * every file (`isolate: false` below): measured on a clean clone, 466 s at three isolated
 * workers, 416 s at three shared, 371 s at four shared.
 */
export const WORKERS = 4;

/** The default suite (`npm test`): everything on SQLite but the platforms and PostgreSQL's own, the CPU hogs last and alone. */
export function defaultProjects(): TestProjectInlineConfiguration[] {
  return [
    {
      extends: true,
      test: {
        name: "suite",
        include: ["test/**/*.test.ts"],
        exclude: [...configDefaults.exclude, ...PLATFORM_FILES, ...POSTGRES_ONLY_FILES, ...FAULT_FILES, ...RUN_ALONE_FILES],
        maxWorkers: WORKERS,
        // A worker keeps the modules it imported from one file to the next (each test file still
        // runs afresh): importing src/ for every file took 168 s of the run's CPU, now 36–46 s.
        // Sound because nothing in src/ or test/helpers keeps state at module level (every
        // service, store and browser is made by a test and closed by it).
        isolate: false,
      },
    },
    {
      extends: true,
      test: {
        name: "alone",
        include: RUN_ALONE_FILES,
        maxWorkers: 1,
        sequence: { groupOrder: 1 },
      },
    },
  ];
}
