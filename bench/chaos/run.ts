/**
 * `npm run chaos`: the long hardening runs, one process each so one's crash cannot hide another's:
 * kill -9 of a real `serve` mid-actions, fuzzing REST and /mcp, and long-poll load.
 * Each prints its own figures and exits non-zero when a promise is broken.
 */
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const runs = ["kill.ts", "fuzz.ts", "load.ts"].filter((file) => only.length === 0 || only.some((name) => file.startsWith(name)));
let failed = 0;
for (const file of runs) {
  console.log(`\n== ${file}`);
  const result = spawnSync(process.execPath, ["--import", "tsx", join(here, file)], { stdio: "inherit" });
  if (result.status !== 0) {
    failed += 1;
    console.log(`== ${file} FAILED (exit ${result.status ?? result.signal})`);
  }
}
process.exit(failed === 0 ? 0 : 1);
