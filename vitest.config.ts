import { defineConfig } from "vitest/config";
import { SHARED, defaultProjects } from "./test/suites.js";

/** `npm test`: the default suite (test/suites.ts says what runs where). */
export default defineConfig({
  test: {
    ...SHARED,
    projects: defaultProjects(),
  },
});
