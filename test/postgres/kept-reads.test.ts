import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { authenticate, issueKey } from "../../src/engine/access/keys.js";
import { PostgresAdapter } from "../../src/store/adapters/postgres.js";
import { FRESH_MS } from "../../src/store/adapters/feed-cache.js";
import { applicationName, newOrigin } from "../../src/store/change-feed.js";
import { Sealer, Store } from "../../src/store/index.js";
import { freshDatabase, templateDatabaseUrl } from "../helpers/database.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import { eventually } from "../helpers/wait.js";

// Keys and ended actions kept between reads on PostgreSQL (DESIGN §11, issue 41): two
// coordinators (stores of their own) on one database. What one of them keeps, the other's write
// drops through the change feed, and never later than one round trip of the feed: a revoked key is
// refused by every coordinator within a second, also when the keeping one's LISTEN connection has
// died without a word. Runs under `npm run test:postgres` only.
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  // A proxy first: a feed closing over a frozen connection would wait for an answer that never comes.
  for (const thing of opened.splice(0).reverse()) await thing.close();
});

const masterKey = randomBytes(32);
const now = (): string => new Date().toISOString();
/** Slack over FRESH_MS for the look that sees the refusal (the waits below look every 20 ms). */
const LOOK_SLACK_MS = 250;

async function coordinator(url: string): Promise<Store> {
  const store = new Store(await PostgresAdapter.open(url), new Sealer(masterKey));
  opened.push(store);
  return store;
}

/**
 * A coordinator whose statements go straight to the database and whose change feed listens through
 * `proxy` (the path a test freezes): the pool is built here as the adapter builds its own.
 */
function coordinatorListeningThrough(url: string, proxy: TcpProxy): Store {
  const origin = newOrigin();
  const pool = new pg.Pool({ connectionString: url, application_name: applicationName(origin), max: 4 });
  pool.on("error", () => undefined);
  const store = new Store(new PostgresAdapter({ pool, origin, connect: () => pool.connect(), end: () => pool.end() }, proxy.through(url)), new Sealer(masterKey));
  opened.push(store);
  return store;
}

/** Waits until `store` answers for `key` from what it keeps: authenticated without a statement. */
async function kept(store: Store, key: string): Promise<void> {
  await eventually(
    async () => {
      const before = store.statementCount;
      const principal = await authenticate(store, key);
      expect(principal).toBeDefined();
      return store.statementCount === before;
    },
    { what: "the coordinator to keep the key (answer for it without a statement)", timeoutMs: 10_000 },
  );
}

/** Revokes through `store` and returns how long `follower` went on accepting the key afterwards. */
async function revokeAndTime(store: Store, keyId: string, follower: Store, key: string): Promise<number> {
  expect(await store.workspaces.revokeKey(keyId, now())).toBe(true);
  const revokedAt = performance.now();
  await eventually(async () => (await authenticate(follower, key)) === undefined, { what: "the revoked key to be refused", timeoutMs: 20_000 });
  return performance.now() - revokedAt;
}

describe("keys kept between reads", () => {
  it("a key revoked through one coordinator is refused by another that kept it within one feed round trip", { timeout: 60_000 }, async () => {
    const url = await freshDatabase(templateDatabaseUrl());
    const a = await coordinator(url);
    const b = await coordinator(url);
    const issued = await issueKey(b, { role: "admin", freeCredits: 0, now: now() });
    await kept(a, issued.key);

    expect(await revokeAndTime(b, issued.id, a, issued.key)).toBeLessThanOrEqual(FRESH_MS + LOOK_SLACK_MS);
  });

  it("a key revoked through the coordinator that kept it is refused by it at once, before its own notification comes back", { timeout: 60_000 }, async () => {
    const url = await freshDatabase(templateDatabaseUrl());
    const { hostname, port } = new URL(url);
    const proxy = await startTcpProxy({ host: hostname, port: Number(port) });
    const a = coordinatorListeningThrough(url, proxy);
    opened.push(proxy);
    const issued = await issueKey(a, { role: "admin", freeCredits: 0, now: now() });
    await kept(a, issued.key);

    // The notification of A's own revoke would come back on the LISTEN connection: held up here.
    proxy.freeze();
    expect(await a.workspaces.revokeKey(issued.id, now())).toBe(true);
    expect(await authenticate(a, issued.key)).toBeUndefined();
    proxy.thaw();
  });

  it("a key revoked while the keeping coordinator's LISTEN connection is dead without a word is refused by it within a second", { timeout: 60_000 }, async () => {
    const url = await freshDatabase(templateDatabaseUrl());
    const { hostname, port } = new URL(url);
    const proxy = await startTcpProxy({ host: hostname, port: Number(port) });
    const a = coordinatorListeningThrough(url, proxy);
    opened.push(proxy);
    const b = await coordinator(url);
    const issued = await issueKey(b, { role: "admin", freeCredits: 0, now: now() });
    await kept(a, issued.key);

    // No notification reaches A any more, and its feed does not know it yet (its ping is seconds away).
    proxy.freeze();
    expect(await revokeAndTime(b, issued.id, a, issued.key)).toBeLessThanOrEqual(FRESH_MS + LOOK_SLACK_MS);
    proxy.thaw();
  });
});

describe("actions kept between reads", () => {
  it("an ended action is read without a statement; one that has not ended is read afresh, so another's change is seen at once", { timeout: 60_000 }, async () => {
    const url = await freshDatabase(templateDatabaseUrl());
    const a = await coordinator(url);
    const b = await coordinator(url);
    const at = now();
    await b.workspaces.insert({ id: "ws_kept", name: "kept", created_at: at });
    await b.accounts.insert({ id: "acc_kept", workspace_id: "ws_kept", platform: "sandbox", username: "kept", created_at: at });
    const action = {
      workspace_id: "ws_kept",
      account_id: "acc_kept",
      platform: "sandbox",
      type: "post" as const,
      params: { text: "hi" },
      error_code: undefined,
      error_message: undefined,
      price: 2,
      cost: 0,
      held: false,
      runner_id: undefined,
      lease: 0,
      committed_at: undefined,
      created_at: at,
      updated_at: at,
    };
    await b.actions.insert({ ...action, id: "act_ended", status: "succeeded", result: { post_id: "1", url: "http://x/1" }, finished_at: at });
    await b.actions.insert({ ...action, id: "act_running", status: "running", result: undefined, finished_at: undefined });

    await eventually(
      async () => {
        const before = a.statementCount;
        expect((await a.actions.get("act_ended"))?.status).toBe("succeeded");
        return a.statementCount === before;
      },
      { what: "A to keep the ended action", timeoutMs: 10_000 },
    );
    expect((await a.actions.get("act_running"))?.status).toBe("running");
    const before = a.statementCount;
    expect((await a.actions.get("act_running"))?.status).toBe("running");
    expect(a.statementCount).toBe(before + 1);
    await b.actions.update("act_running", { status: "succeeded", result: { post_id: "2", url: "http://x/2" }, finished_at: now() }, now());
    expect((await a.actions.get("act_running"))?.status).toBe("succeeded");
  });
});
