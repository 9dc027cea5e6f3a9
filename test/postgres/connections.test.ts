import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { PostgresAdapter } from "../../src/store/index.js";
import { freshDatabase, templateDatabaseUrl } from "../helpers/database.js";
import { startTcpProxy } from "../helpers/tcp-proxy.js";

// A coordinator frozen in the middle of a transaction (issue 40: a kernel pause, a long GC, a
// network that stops without a word), right after it sent a write: it holds that write's locks.
// Coordinator A reaches PostgreSQL through a proxy the test freezes; B directly. Runs under
// `npm run test:postgres` only.
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  // The proxy first: a pool ending over a frozen connection would wait for an answer that never comes.
  for (const thing of opened.splice(0)) await thing.close().catch(() => undefined);
});

/** `promise`'s value, or "still waiting" after `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | "still waiting"> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<"still waiting">((resolve) => (timer = setTimeout(() => resolve("still waiting"), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

describe("a coordinator frozen inside a transaction, holding a row's lock", () => {
  it("holds another coordinator's write to that row for seconds, not for the freeze; thawed, its own transaction runs again and commits: nothing lost, nothing twice", { timeout: 120_000 }, async () => {
    const url = await freshDatabase(templateDatabaseUrl());
    const { hostname, port } = new URL(url);
    const proxy = await startTcpProxy({ host: hostname, port: Number(port) });
    opened.push(proxy);
    const a = await PostgresAdapter.open(proxy.through(url));
    const b = await PostgresAdapter.open(url);
    opened.push(a, b);
    await b.db.insertInto("workspaces").values({ id: "ws_frozen", name: "frozen", balance: 0, created_at: new Date().toISOString() }).execute();
    const balance = async (): Promise<number> => (await b.db.selectFrom("workspaces").select("balance").where("id", "=", "ws_frozen").executeTakeFirstOrThrow()).balance;

    let attempts = 0;
    let wrote!: () => void;
    const written = new Promise<void>((resolve) => (wrote = resolve));
    const frozenWrite = a.transaction(async (trx) => {
      attempts++;
      await trx.updateTable("workspaces").set({ balance: sql`balance + 1` }).where("id", "=", "ws_frozen").execute();
      if (attempts === 1) {
        // Frozen right after its write came back: its session is idle in the transaction, the row locked.
        proxy.freeze();
        wrote();
      }
      await trx.selectFrom("workspaces").select("balance").where("id", "=", "ws_frozen").execute();
    });
    await written;

    // The rest of the fleet: the same row, written while A is frozen (far longer than the session timeouts).
    const other = b.transaction(async (trx) => {
      await trx.updateTable("workspaces").set({ balance: sql`balance + 10` }).where("id", "=", "ws_frozen").execute();
    });
    expect(await within(other, 40_000)).not.toBe("still waiting");
    expect(await balance()).toBe(10);

    // A wakes: its session was ended (nothing of it committed), so its transaction runs again, once.
    proxy.thaw();
    await frozenWrite;
    expect(attempts).toBe(2);
    expect(await balance()).toBe(11);
  });
});
