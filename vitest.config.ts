import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The real-platform suites need MediaWiki and Ghost installed (`npm run test:platforms`); the
    // PostgreSQL-only ones a cluster (`npm run test:postgres`).
    exclude: [...configDefaults.exclude, "test/platforms/**", "test/postgres/**"],
    // Browser tests share one Chromium per file; two cores means two files at a time.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
