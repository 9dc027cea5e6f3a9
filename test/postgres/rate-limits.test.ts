import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { RateLimiter } from "../../src/engine/access/rate-limit.js";
import { systemClock } from "../../src/engine/clock.js";
import { PostgresAdapter } from "../../src/store/adapters/postgres.js";
import { Sealer, Store } from "../../src/store/index.js";
import { freshDatabase, templateDatabaseUrl } from "../helpers/database.js";

// The per-key rate limit is one bucket every coordinator draws from (DESIGN §11), a row every
// request of the key took from: a logged update whose commit waited for the disk, one statement a
// request. Now the takes of a key that wait behind the one under way go in one statement, and the
// bucket's table writes no WAL. Runs under `npm run test:postgres` only.
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const thing of opened.splice(0).reverse()) await thing.close();
});

const PER_MINUTE = 10;
const TAKES = 30;

async function coordinator(url: string): Promise<Store> {
  const store = new Store(await PostgresAdapter.open(url), new Sealer(randomBytes(32)));
  opened.push(store);
  return store;
}

describe("shared rate-limit buckets", () => {
  it("two coordinators' takes at once get the key's budget once between them, a statement per round trip, not per take", { timeout: 60_000 }, async () => {
    const url = await freshDatabase(templateDatabaseUrl());
    const stores = [await coordinator(url), await coordinator(url)];
    const limiters = stores.map((store) => new RateLimiter(PER_MINUTE, systemClock, store));
    const before = stores.map((store) => store.statementCount);
    const started = performance.now();
    const waits = (await Promise.all(limiters.flatMap((limiter) => Array.from({ length: TAKES }, () => limiter.take("key_shared"))))).flat();
    const seconds = (performance.now() - started) / 1000;

    // The bucket refills PER_MINUTE a minute meanwhile: a slow machine may earn a token more.
    const allowed = waits.filter((wait) => wait === 0).length;
    expect(allowed).toBeGreaterThanOrEqual(PER_MINUTE);
    expect(allowed).toBeLessThanOrEqual(PER_MINUTE + Math.ceil((seconds * PER_MINUTE) / 60));
    for (const wait of waits.filter((wait) => wait > 0)) expect(wait).toBeGreaterThanOrEqual(1);
    // Each coordinator: the first take at once, the 29 that came meanwhile in the next statement.
    expect(stores.map((store, n) => store.statementCount - before[n]!)).toEqual([2, 2]);
  });

  it("a take writes no WAL: its commit waits for no disk", { timeout: 60_000 }, async () => {
    const url = await freshDatabase(templateDatabaseUrl());
    const store = await coordinator(url);
    const limiter = new RateLimiter(PER_MINUTE, systemClock, store);
    await limiter.take("key_wal");
    // The statement the store sends, caught on its way, and run again under EXPLAIN (ANALYZE, WAL).
    const sent: { text: string; values: unknown[] }[] = [];
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const [config, values] = args as [string | { text: string; values?: unknown[] }, unknown[] | undefined];
      if (typeof config === "object" && /rate_limits/.test(config.text)) sent.push({ text: config.text, values: config.values ?? [] });
      else if (typeof config === "string" && /rate_limits/.test(config)) sent.push({ text: config, values: values ?? [] });
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    try {
      await limiter.take("key_wal");
    } finally {
      pg.Client.prototype.query = query;
    }
    expect(sent).toHaveLength(1);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    opened.push({ close: () => client.end() });
    const { rows } = await client.query<{ "QUERY PLAN": [{ Plan: { "WAL Records": number } }] }>(`EXPLAIN (ANALYZE, WAL, FORMAT JSON) ${sent[0]!.text}`, sent[0]!.values);
    expect(rows[0]!["QUERY PLAN"][0].Plan["WAL Records"]).toBe(0);
  });
});
