import { defineConfig } from "vitest/config";
import { PLATFORM_FILES, SHARED } from "./test/suites.js";

/**
 * `npm run test:platforms`: the suites that run against real MediaWiki and Ghost installs
 * (scripts/platforms/install.mjs puts them in place). Each file starts its own wiki and site;
 * Ghost takes ≈350 MB and up to half a minute to start, so two files at a time on two cores.
 */
export default defineConfig({
  test: {
    ...SHARED,
    include: PLATFORM_FILES.map((folder) => `${folder}/*.test.ts`),
    maxWorkers: 2,
    testTimeout: 120_000,
    // A first Ghost start on a machine also migrates the pristine database it copies afterwards.
    hookTimeout: 300_000,
  },
});
