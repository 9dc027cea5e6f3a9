import { describe, expect, it } from "vitest";
import { setTimeout as sleep } from "node:timers/promises";
import { startStatementProxy, type SentStatement } from "../helpers/statement-proxy.js";
import { coordinatorsOnPostgres } from "./support.js";

/** Long enough to hold every timer's period at least once: the change feed's slow poll is 30 s. */
const WINDOW_MS = 31_000;
/** Start-up's own statements (migrations, first reads, a first heartbeat) are not idleness. */
const SETTLE_MS = 8_000;

function breakdown(statements: readonly SentStatement[]): string {
  const byText = new Map<string, number>();
  for (const { text } of statements) {
    const key = text.replace(/\s+/g, " ").slice(0, 140);
    byText.set(key, (byText.get(key) ?? 0) + 1);
  }
  return [...byText]
    .sort((a, b) => b[1] - a[1])
    .map(([text, count]) => `${String(count).padStart(4)}  ${text}`)
    .join("\n");
}

// DESIGN §11 "Scaling out adds capacity": an idle coordinator sends at most one statement a second,
// counted on the wire in front of PostgreSQL on every connection it opens. Runs under `npm run
// test:postgres` only.
describe("an idle coordinator on PostgreSQL", () => {
  const fleet = coordinatorsOnPostgres("idle");

  it("sends at most one statement a second, on all its connections together", { timeout: 120_000 }, async () => {
    const database = await fleet.database();
    const server = new URL(database.url);
    const proxy = await startStatementProxy({ host: server.hostname, port: Number(server.port) });
    try {
      await database.start(1, { ACTION_SERVICE_DATABASE_URL: proxy.through(database.url) });
      await sleep(SETTLE_MS);
      const from = proxy.count;
      const started = Date.now();
      await sleep(WINDOW_MS);
      const seconds = (Date.now() - started) / 1000;
      const sent = proxy.statements.slice(from);
      const perSecond = sent.length / seconds;
      const report = `${sent.length} statements in ${seconds.toFixed(1)} s (${perSecond.toFixed(2)}/s):\n${breakdown(sent)}`;
      console.log(report);
      expect(perSecond, report).toBeLessThanOrEqual(1);
    } finally {
      await proxy.close();
    }
  });
});
