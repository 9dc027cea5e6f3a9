import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { PostgresAdapter } from "../../src/store/adapters/postgres.js";
import { CHANGES_CHANNEL, PostgresChangeFeed, type Change, type FeedTiming } from "../../src/store/change-feed.js";
import { freshDatabase, templateDatabaseUrl } from "../helpers/database.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import { eventually } from "../helpers/wait.js";

// The change feed's LISTEN connection reaches PostgreSQL through a proxy the test controls, which
// stops forwarding without closing anything: a connection dead behind a NAT or a balancer (issue
// 40). A change committed meanwhile by another connection must still reach the feed's listeners
// within seconds — before a 30 s `?wait` runs out. Runs under `npm run test:postgres` only.
const HOUR = 3_600_000;

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  // The proxy first: a client ending over a frozen connection would wait for an answer that never comes.
  for (const thing of opened.splice(0)) await thing.close();
});

async function setUp(timing: FeedTiming): Promise<{ proxy: TcpProxy; feed: PostgresChangeFeed; calls: () => number; notify(): Promise<void> }> {
  const url = await freshDatabase(templateDatabaseUrl());
  const { hostname, port } = new URL(url);
  const proxy = await startTcpProxy({ host: hostname, port: Number(port) });
  opened.push(proxy);
  const feed = new PostgresChangeFeed(proxy.through(url), timing);
  opened.push(feed);
  let calls = 0;
  feed.on(() => calls++);
  // Another coordinator's commit, on a connection of its own that does not go through the proxy.
  const writer = new pg.Client({ connectionString: url });
  writer.on("error", () => undefined);
  await writer.connect();
  opened.push({ close: () => writer.end() });
  return { proxy, feed, calls: () => calls, notify: async () => void (await writer.query(`SELECT pg_notify('${CHANGES_CHANNEL}', 'action:act_test')`)) };
}

describe("the PostgreSQL change feed on a connection that dies without a word", () => {
  it("notices by its ping, listens again on a new connection, and calls its listeners for what it may have missed", { timeout: 60_000 }, async () => {
    const { proxy, calls, notify } = await setUp({ pingEveryMs: 500, pingTimeoutMs: 1_000, fallbackEveryMs: HOUR, listeningFallbackEveryMs: HOUR });
    await eventually(() => calls() >= 1, { what: "the feed to listen (its first look)" });
    const listening = calls();
    await notify();
    await eventually(() => calls() > listening, { what: "a notification through the live connection" });

    proxy.freeze({ existingOnly: true });
    const beforeFreeze = calls();
    await notify();
    // Missed on the dead connection; found by the ping, whose reconnect calls the listeners.
    await eventually(() => calls() > beforeFreeze, { what: "the listeners to be called after the connection died", timeoutMs: 20_000 });
    expect(proxy.connections).toBeGreaterThanOrEqual(2);

    // The new connection listens: the next notification arrives on it.
    await eventually(async () => {
      const seen = calls();
      await notify();
      return eventually(() => calls() > seen, { what: "a notification on the new connection", timeoutMs: 10_000 });
    }, { what: "notifications to flow again" });
  });

  it("calls its listeners every few seconds while it cannot listen at all, so every follower reads again", { timeout: 60_000 }, async () => {
    const { proxy, calls } = await setUp({ pingEveryMs: 500, pingTimeoutMs: 1_000, fallbackEveryMs: 1_000, listeningFallbackEveryMs: HOUR });
    await eventually(() => calls() >= 1, { what: "the feed to listen (its first look)" });
    // Every connection, old and new, goes nowhere: no notification and no reconnect can help.
    proxy.freeze();
    const frozenAt = calls();
    await eventually(() => calls() >= frozenAt + 3, { what: "three slow-poll calls while the feed is dead", timeoutMs: 20_000 });
    proxy.thaw();
  });
});

describe("what a notification says", () => {
  it("names what changed and the store that wrote it, so a coordinator can tell its own writes from others'", { timeout: 60_000 }, async () => {
    const url = await freshDatabase(templateDatabaseUrl());
    const writer = await PostgresAdapter.open(url);
    const follower = await PostgresAdapter.open(url);
    opened.push(writer, follower);
    expect(writer.origin).not.toBe(follower.origin);
    const heard: Change[] = [];
    follower.changes.on((change) => change && heard.push(change));
    const now = new Date().toISOString();
    await writer.db.insertInto("workspaces").values({ id: "ws_feed", name: "feed", created_at: now }).execute();
    await eventually(async () => {
      const id = `evt_${randomBytes(4).toString("hex")}`;
      await writer.db.insertInto("events").values({ id, workspace_id: "ws_feed", type: "account.updated", subject_id: "acc_x", account_id: "acc_x", data: "{}", created_at: now }).execute();
      return heard.length > 0;
    }, { what: "the follower to listen and hear the writer's commit" });
    expect(heard[0]).toEqual({ subject: "event:ws_feed", origin: writer.origin });

    // A notification from something that is not an action-service store names no origin.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    opened.push({ close: () => other.end() });
    await other.query(`SELECT pg_notify('${CHANGES_CHANNEL}', 'action:act_x|psql')`);
    await eventually(() => heard.some((change) => change.subject === "action:act_x"), { what: "the foreign notification" });
    expect(heard.find((change) => change.subject === "action:act_x")!.origin).toBeUndefined();
  });
});
