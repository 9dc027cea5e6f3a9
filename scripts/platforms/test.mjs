#!/usr/bin/env node
/**
 * `npm run test:platforms [-- vitest args]`: installs the real platforms when they are missing
 * (scripts/platforms/install.mjs), then runs the suites in test/platforms against them.
 */
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { install } from "./install.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
try {
  install();
} catch (error) {
  console.error(`[platforms] ${error instanceof Error ? error.message : error}`);
  process.exit(1);
}
const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
const result = spawnSync(process.execPath, [vitest, "run", "-c", "vitest.platforms.config.mts", ...process.argv.slice(2)], { cwd: root, stdio: "inherit" });
process.exit(result.status ?? 1);
