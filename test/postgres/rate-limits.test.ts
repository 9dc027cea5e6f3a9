import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { BLOCK_MS, RateLimiter } from "../../src/engine/access/rate-limit.js";
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

  it("a key read over and over on one coordinator draws on blocks: a hundred takes one after another cost a handful of statements, not a hundred", { timeout: 60_000 }, async () => {
    const url = await freshDatabase(templateDatabaseUrl());
    const store = await coordinator(url);
    // Blocks of up to 100 tokens (what 6,000 a minute refills in a second).
    const limiter = new RateLimiter(6_000, systemClock, store);
    const before = store.statementCount;
    for (let i = 0; i < 100; i++) expect(await limiter.take("key_read")).toBe(0);
    const sent = store.statementCount - before;
    console.log(`statements for 100 takes one after another: ${sent}`);
    // Blocks of 1, 2, 4, … 64: seven statements (the old code: one a take).
    expect(sent).toBeLessThanOrEqual(10);
  });

  it("three coordinators drawing on one key in blocks get its budget, over it by at most one block each, under it by no more", { timeout: 120_000 }, async () => {
    const url = await freshDatabase(templateDatabaseUrl());
    const stores = [await coordinator(url), await coordinator(url), await coordinator(url)];
    const perMinute = 600;
    const largestBlock = (perMinute / 60_000) * BLOCK_MS;
    const limiters = stores.map((store) => new RateLimiter(perMinute, systemClock, store));
    const before = stores.map((store) => store.statementCount);
    const started = performance.now();
    // Each coordinator a stream of takes one after another, all three at once: its blocks grow.
    const waits = await Promise.all(
      limiters.map(async (limiter) => {
        const seen: number[] = [];
        for (let i = 0; i < 400; i++) seen.push(await limiter.take("key_fleet"));
        return seen;
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const allowed = waits.flat().filter((wait) => wait === 0).length;
    const refilled = Math.ceil((seconds * perMinute) / 60);
    console.log(`allowed ${allowed} of ${perMinute} a minute in ${seconds.toFixed(1)} s, statements ${stores.map((store, n) => store.statementCount - before[n]!).join(", ")}`);
    expect(allowed).toBeLessThanOrEqual(perMinute + refilled + 3 * largestBlock);
    expect(allowed).toBeGreaterThanOrEqual(perMinute - 3 * largestBlock);
    for (const wait of waits.flat().filter((wait) => wait > 0)) expect(wait).toBeGreaterThanOrEqual(1);
    // The allowed takes rode on blocks: far fewer statements than takes allowed.
    const statements = stores.reduce((sum, store, n) => sum + store.statementCount - before[n]!, 0);
    const refused = waits.flat().length - allowed;
    expect(statements - refused).toBeLessThan(allowed / 3);
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
