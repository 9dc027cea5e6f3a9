import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * This package's folder (package.json, migrations/): the first one above this module holding a
 * package.json. This module is `src/package.ts` under the test runner and part of a chunk in `dist/`
 * once built (scripts/bundle.mjs), so no path relative to it is the same in both.
 */
export const PACKAGE_DIR = ((): string => {
  const here = fileURLToPath(import.meta.url);
  for (let dir = dirname(here); ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${here}: the package is incomplete`);
  }
})();

/** This package's version (package.json's). */
export const PACKAGE_VERSION = (JSON.parse(readFileSync(join(PACKAGE_DIR, "package.json"), "utf8")) as { version: string }).version;
