import { configDefaults, defineConfig } from "vitest/config";
import { PLATFORM_FILES, POSTGRES_FILES, SHARED, SQLITE_ONLY_FILES, WORKERS } from "./test/suites.js";

/**
 * `npm run test:postgres`: the suites that run again with their stores on PostgreSQL
 * (scripts/postgres/test.mjs starts a throw-away cluster and sets ACTION_SERVICE_TEST_DATABASE_URL
 * to a migrated template; test/helpers/database.ts copies it for every store a test opens).
 * test/suites.ts says which and why.
 */
export default defineConfig({
  test: {
    ...SHARED,
    include: POSTGRES_FILES,
    exclude: [...configDefaults.exclude, ...PLATFORM_FILES, ...SQLITE_ONLY_FILES],
    maxWorkers: WORKERS,
  },
});
