import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { freshDatabase, onPostgres, templateDatabaseUrl } from "../helpers/database.js";
import { formatKillReport, runKillChaos } from "./kill-support.js";

// Real processes: a sandbox child, a `node dist/cli.js serve` child SIGKILLed three times mid-posts and
// started again on the same data dir, real Chromium, and the data dir's SQLite file (`npm test`) or a
// PostgreSQL database (`npm run test:postgres`). The long run is bench/chaos/kill.ts.
describe("kill -9 of serve while clients post", () => {
  it("loses, repeats, strands and double-charges nothing; the ledger sums to the balance", { timeout: 240_000 }, async () => {
    const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31);
    const report = await runKillChaos({
      ...(onPostgres() ? { database: { url: await freshDatabase(templateDatabaseUrl()), masterKey: randomBytes(32).toString("hex") } } : {}),
      accounts: 4,
      actions: 30,
      kills: 3,
      idempotentShare: 0.7,
      clients: 6,
      platformDelayMs: 300,
      killJitterMs: 1_500,
      settleTimeoutMs: 90_000,
      seed,
    });
    const summary = formatKillReport(report);
    console.log(summary);
    expect(report.violations, summary).toEqual([]);
    expect(report.kills).toHaveLength(3);
    expect(report.duplicatePosts).toBe(0);
    expect(report.ledgerSum).toBe(report.balance);
    // Every action the clients know of ended, and each succeeded post is on the platform.
    expect(report.actionsWithId + report.unacknowledged).toBe(30);
    expect(report.byOutcome.succeeded ?? 0).toBeGreaterThan(0);
    expect(report.postsMade).toBeGreaterThanOrEqual(report.byOutcome.succeeded ?? 0);
  });
});
