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
});
