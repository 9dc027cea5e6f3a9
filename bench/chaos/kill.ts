/**
 * kill -9 chaos, the long run: CHAOS_KILL_ACTIONS (200) posts over CHAOS_KILL_ACCOUNTS (10) sandbox
 * accounts while `serve` is SIGKILLed CHAOS_KILL_KILLS (12) times at random moments and started
 * again on the same data dir (test/chaos/kill-support.ts says what is checked). CHAOS_SEED replays a
 * plan (texts, keys, kill points; the timing of a real machine still varies). Prints the figures;
 * exits 1 when a promise is broken (the data dir and logs are then kept and named).
 */
import { formatKillReport, runKillChaos } from "../../test/chaos/kill-support.js";

const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31);
const report = await runKillChaos({
  accounts: Number(process.env.CHAOS_KILL_ACCOUNTS ?? 10),
  actions: Number(process.env.CHAOS_KILL_ACTIONS ?? 200),
  kills: Number(process.env.CHAOS_KILL_KILLS ?? 12),
  idempotentShare: 0.7,
  clients: 16,
  platformDelayMs: 300,
  killJitterMs: 2_500,
  settleTimeoutMs: 120_000,
  seed,
  keep: process.env.CHAOS_KEEP === "1",
  log: (line) => console.log(`  … ${line}`),
});
console.log(formatKillReport(report));
console.log(report.violations.length === 0 ? "OK" : `FAILED (replay the plan with CHAOS_SEED=${seed})`);
process.exit(report.violations.length === 0 ? 0 : 1);
