import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BrowserContext } from "playwright";
import { BrowserPool } from "../../src/browser/pool.js";
import { silentLogger } from "../../src/engine/logger.js";

// The real pool on this machine's Chromium: which contexts it keeps warm and which it closes.
let pool: BrowserPool;

beforeAll(() => {
  pool = new BrowserPool({ idleMs: 60_000, maxContexts: 1, logger: silentLogger });
});

afterAll(async () => {
  await pool.close();
});

const noSession = (): undefined => undefined;

describe("the browser pool", () => {
  it("never closes a context in use: busy contexts are not counted, and one taken while others are evicted is kept", async () => {
    // Three accounts in use at once: none is idle, so none is closed, whatever maxContexts says.
    const [oldest, taken] = await Promise.all(["oldest", "taken", "third"].map((id) => pool.acquire(id, noSession)));
    for (const id of ["oldest", "taken", "third"]) expect(pool.contextOf(id)).toBeDefined();
    for (const id of ["oldest", "taken", "third"]) {
      pool.release(id);
      await new Promise((resolve) => setTimeout(resolve, 5)); // a distinct last use each
    }
    // While a new account's acquire evicts the idle ones (oldest first), "taken" is acquired again.
    let takenAgain: Promise<BrowserContext> | undefined;
    oldest!.once("close", () => {
      takenAgain = pool.acquire("taken", noSession);
    });
    const fresh = await pool.acquire("fresh", noSession);
    expect(takenAgain).toBeDefined();
    expect(await takenAgain).toBe(taken);
    // The context "taken" got is open and usable; the oldest idle one was closed.
    const page = await taken!.newPage();
    await page.close();
    // The other idle ones beyond maxContexts (1) were closed, oldest first.
    expect(pool.contextOf("oldest")).toBeUndefined();
    expect(pool.contextOf("third")).toBeUndefined();
    expect(pool.contextOf("taken")).toBe(taken);
    expect(pool.contextOf("fresh")).toBe(fresh);
    pool.release("taken");
    pool.release("fresh");
  });

  it("a brief use (a health check) of a cold account closes its context at release, leaving the warm ones and the spare alone", async () => {
    const own = new BrowserPool({ idleMs: 60_000, maxContexts: 1, maxPages: 4, logger: silentLogger });
    try {
      const warm = await own.acquire("acting", noSession);
      own.release("acting");
      const brief = await own.acquire("idle", noSession, { brief: true });
      // Its own context, with no page: the spare (a context with its page open) was not taken.
      expect(brief.pages()).toEqual([]);
      // Busy, it is not idle: the warm context (maxContexts 1) was not closed to make room for it.
      expect(own.contextOf("acting")).toBe(warm);
      const closed = new Promise((resolve) => brief.once("close", resolve));
      own.release("idle");
      await closed;
      expect(own.contextOf("idle")).toBeUndefined();
      expect(own.contextOf("acting")).toBe(warm);
      // A warm account's brief use is its warm context, and it stays warm after.
      expect(await own.acquire("acting", noSession, { brief: true })).toBe(warm);
      own.release("acting");
      expect(own.contextOf("acting")).toBe(warm);
    } finally {
      await own.close();
    }
  });

  it("tells, per endpoint, the accounts' contexts and their open pages, naming each endpoint without credentials or query", async () => {
    const own = new BrowserPool({ idleMs: 60_000, maxContexts: 10, logger: silentLogger });
    try {
      const context = await own.acquire("counted", noSession);
      await context.newPage();
      await context.newPage();
      await own.acquire("other", noSession);
      expect(own.usage()).toEqual([{ endpoint: "local", contexts: 2, pages: 2 }]);
      await own.forget("counted");
      expect(own.usage()).toEqual([{ endpoint: "local", contexts: 1, pages: 0 }]);
    } finally {
      await own.close();
    }
    // Never connected: the names come from the configuration alone, a token in them left out.
    const fleet = new BrowserPool({
      idleMs: 60_000,
      maxContexts: 10,
      logger: silentLogger,
      endpoints: [
        { kind: "playwright", url: "ws://user:secret-pass@browsers.internal:3000/play?token=secret-token" },
        { kind: "cdp", url: "cdp+wss://cloud.example.com/chromium?apiKey=secret-key" },
      ],
    });
    expect(fleet.usage()).toEqual([
      { endpoint: "playwright:ws://browsers.internal:3000/play", contexts: 0, pages: 0 },
      { endpoint: "cdp:wss://cloud.example.com/chromium", contexts: 0, pages: 0 },
    ]);
    await fleet.close();
  });
});
