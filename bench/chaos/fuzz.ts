/**
 * Fuzzes REST and /mcp with the suite's generators at scale (test/security/fuzz-support.ts):
 * FUZZ_REQUESTS (default 12,000) requests over real HTTP on 127.0.0.1, FUZZ_SEED to replay a run.
 * Prints the figures; exits 1 on any 5xx, any state change by a rejected request, or any other broken promise.
 */
import { formatFigures, runFuzz } from "../../test/security/fuzz-support.js";

const total = Number(process.env.FUZZ_REQUESTS ?? 12_000);
const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
const rest = Math.round(total * 0.65);
const mcpRaw = Math.round(total * 0.2);

const figures = await runFuzz({ seed, rest, mcpRaw, mcpSdk: total - rest - mcpRaw }, (line) => console.log(`  … ${line}`));
console.log(formatFigures(figures));
const failed = figures.serverErrors > 0 || figures.rejectedChangedState > 0 || figures.violations.length > 0;
console.log(failed ? `FAILED (replay with FUZZ_SEED=${seed})` : "OK");
process.exit(failed ? 1 : 0);
