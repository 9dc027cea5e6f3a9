import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { formatKillReport, runKillChaos } from "../chaos/kill-support.js";
import { freshDatabase, templateDatabaseUrl } from "../helpers/database.js";

// Three machines (DESIGN §11): three `serve` processes, each with its own data dir, on one
// PostgreSQL database and one sandbox, real Chromium. Runs under `npm run test:postgres` only.
describe("three coordinators on one PostgreSQL database", () => {
  it("share accounts and keys; 60 posts over 6 accounts while one is killed -9 twice: every action ends, nothing is posted twice, more than one coordinator works, ledger = balance", { timeout: 300_000 }, async () => {
    const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31);
    const report = await runKillChaos({
      coordinators: 3,
      database: { url: await freshDatabase(templateDatabaseUrl()), masterKey: randomBytes(32).toString("hex") },
      accounts: 6,
      actions: 60,
      kills: 2,
      idempotentShare: 0.7,
      clients: 6,
      platformDelayMs: 200,
      killJitterMs: 1_500,
      settleTimeoutMs: 120_000,
      seed,
    });
    const summary = formatKillReport(report);
    console.log(summary);
    expect(report.violations, summary).toEqual([]);
    expect(report.kills).toHaveLength(2);
    expect(report.duplicatePosts).toBe(0);
    expect(report.ledgerSum).toBe(report.balance);
    expect(report.actionsWithId + report.unacknowledged).toBe(60);
    expect(Object.keys(report.byCoordinator).filter((label) => label !== "?").length).toBeGreaterThan(1);
  });
});
