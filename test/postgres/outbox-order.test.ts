import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, expect, it } from "vitest";
import { OUTBOX_START, cursorOf, type EventCursor, type EventRecord, type Store } from "../../src/store/index.js";
import { temporaryStore } from "../helpers/database.js";
import { createHarness } from "../helpers/harness.js";
import { ScriptedExecutor } from "../helpers/scripted-executor.js";
import { rows, sql } from "../helpers/sql.js";
import { eventually } from "../helpers/wait.js";

// The outbox on PostgreSQL without a cluster-wide lock (decisions: "The outbox is read in transaction
// order"): transactions that write events hold each other up nowhere, commit in any order, and a
// reader still reads every committed event once, in an order that never puts an event before one
// committed ahead of its writing. Transactions are held open here as a coordinator stalled in the
// middle of one holds them. Runs under `npm run test:postgres` only.

let store: Store;
let remove: () => Promise<void>;
let workspaceId: string;

beforeEach(async () => {
  ({ store, remove } = await temporaryStore("outbox-order-"));
  workspaceId = `ws_${randomBytes(6).toString("hex")}`;
  await store.workspaces.insert({ id: workspaceId, name: "outbox order", created_at: new Date().toISOString() });
});
afterEach(async () => {
  await endHeld();
  await remove();
});

/** Ends the transactions a failed test left held, so its stores can close. */
async function endHeld(): Promise<void> {
  await Promise.all(held.splice(0).map((transaction) => transaction.rollBack()));
}

const event = (name: string, workspace = workspaceId): Omit<EventRecord, "seq" | "tx_order"> => ({
  id: `evt_${name}`,
  workspace_id: workspace,
  type: "action.updated",
  subject_id: `act_${name}`,
  account_id: "acc_order",
  challenge_id: undefined,
  data: { name },
  created_at: new Date().toISOString(),
});

/** Appends one event as the outbox does (`events.insertAll`); its `seq`. */
const append = async (on: Store, written: Omit<EventRecord, "seq" | "tx_order">): Promise<number> => (await on.events.insertAll([written])).seqs[0]!;

/** A transaction held open after `work` (a coordinator stopped before its commit), ended when the test says. */
interface Held<T> {
  /** What `work` returned, once it has run (the transaction still open). */
  written: Promise<T>;
  commit(): Promise<void>;
  rollBack(): Promise<void>;
}

class RolledBack extends Error {}
const held: Held<unknown>[] = [];

function hold<T>(work: () => Promise<T>, options: { locksRows?: boolean; on?: Store } = {}): Held<T> {
  let end!: (commit: boolean) => void;
  const ending = new Promise<boolean>((resolve) => (end = resolve));
  let wrote!: (value: T) => void;
  const written = new Promise<T>((resolve) => (wrote = resolve));
  const done = (options.on ?? store)
    .transaction(async () => {
      wrote(await work());
      if (!(await ending)) throw new RolledBack();
    }, { locksRows: options.locksRows ?? false })
    .catch((error: unknown) => {
      if (!(error instanceof RolledBack)) throw error;
    });
  const transaction = {
    written: Promise.race([written, done.then(() => Promise.reject(new Error("the held transaction ended before its work was done")))]),
    commit: () => (end(true), done),
    rollBack: () => (end(false), done),
  };
  held.push(transaction);
  return transaction;
}

/** What a reader following the workspace's outbox from `after` reads now (every page). */
async function readAfter(after: EventCursor): Promise<EventRecord[]> {
  const read: EventRecord[] = [];
  for (let page = await store.events.after(workspaceId, after, 2); page.length > 0; page = await store.events.after(workspaceId, cursorOf(read.at(-1)!), 2)) read.push(...page);
  return read;
}

const names = (events: EventRecord[]): unknown[] => events.map((read) => read.data.name);

it("a transaction that wrote an event and stays open does not hold up another connection's event insert and commit", async () => {
  const stalled = hold(() => append(store, event("stalled")));
  await stalled.written;
  let other: string | undefined;
  const insert = store.transaction(() => append(store, event("other"))).then(() => (other = "committed"));
  try {
    // The insert either commits or is seen waiting on a lock (the old outbox's lock, held to the stalled commit).
    const waitsOnALock = async (): Promise<boolean> =>
      (await rows<{ n: number }>(store, sql`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0]!.n > 0;
    const outcome = await eventually(async () => other ?? ((await waitsOnALock()) && "waits on the stalled transaction's lock"), { what: "the other insert to commit or to wait on a lock" });
    expect(outcome).toBe("committed");
  } finally {
    await stalled.commit();
    await insert;
  }
  expect(names(await readAfter(OUTBOX_START))).toEqual(["stalled", "other"]);
});

it("an event committed later with a lower seq is read, once, by a reader that already read a higher seq of a transaction that ended first", async () => {
  let tookItsId!: () => void;
  const earlierHasAnId = new Promise<void>((resolve) => (tookItsId = resolve));
  let lowerWritten!: () => void;
  const lowerSeqWritten = new Promise<void>((resolve) => (lowerWritten = resolve));
  // This transaction begins first (a write gives it its transaction id), writes its event after the other's and commits first.
  const earlier = hold(async () => {
    await store.workspaces.insert({ id: `ws_${randomBytes(6).toString("hex")}`, name: "gives the transaction an id", created_at: new Date().toISOString() });
    tookItsId();
    await lowerSeqWritten;
    return append(store, event("higher seq, committed first"));
  });
  await earlierHasAnId;
  const later = hold(() => append(store, event("lower seq, committed later")));
  const lowerSeq = await later.written;
  lowerWritten();
  expect(await earlier.written).toBeGreaterThan(lowerSeq);
  await earlier.commit();

  const first = await readAfter(OUTBOX_START);
  expect(names(first)).toEqual(["higher seq, committed first"]);
  await later.commit();
  const then = await readAfter(cursorOf(first.at(-1)!));
  expect(names(then)).toEqual(["lower seq, committed later"]);
  expect(then[0]!.seq).toBeLessThan(first[0]!.seq);
  expect(await readAfter(cursorOf(then.at(-1)!))).toEqual([]);
});

it("a reader does not pass an open transaction's event: what committed after it waits, then both are read in order", async () => {
  const open = hold(() => append(store, event("open")));
  await open.written;
  await append(store, event("committed while the first is open"));
  expect(await readAfter(OUTBOX_START)).toEqual([]);
  expect(names(await store.events.list(workspaceId, 10))).toEqual(["committed while the first is open"]);
  await open.commit();
  expect(names(await readAfter(OUTBOX_START))).toEqual(["open", "committed while the first is open"]);
});

it("an event rolled back leaves no hole: what committed after it is read as soon as it is gone", async () => {
  const open = hold(() => append(store, event("rolled back")));
  await open.written;
  await append(store, event("committed"));
  expect(await readAfter(OUTBOX_START)).toEqual([]);
  await open.rollBack();
  expect(names(await readAfter(OUTBOX_START))).toEqual(["committed"]);
});

it("an event written after another's commit, seeing it, is read after it, even from a transaction that began first", async () => {
  let tookItsId!: () => void;
  const earlierHasAnId = new Promise<void>((resolve) => (tookItsId = resolve));
  let otherCommitted!: () => void;
  const afterTheOther = new Promise<void>((resolve) => (otherCommitted = resolve));
  const earlier = hold(async () => {
    await store.workspaces.insert({ id: `ws_${randomBytes(6).toString("hex")}`, name: "gives the transaction an id", created_at: new Date().toISOString() });
    tookItsId();
    await afterTheOther;
    return append(store, event("written after the other's commit"));
    // Read committed: each statement sees what committed before it (a SERIALIZABLE transaction sees
    // only what committed before it began, and is placed before what it did not see).
  }, { locksRows: true });
  await earlierHasAnId;
  await store.transaction(() => append(store, event("committed first")));
  otherCommitted();
  await earlier.written;
  await earlier.commit();
  expect(names(await readAfter(OUTBOX_START))).toEqual(["committed first", "written after the other's commit"]);
});

it("a reader starting now starts after the newest event it may pass, and the stream's resume point is the event's place", async () => {
  await append(store, event("before"));
  const open = hold(() => append(store, event("open at the start")));
  await open.written;
  const start = (await store.events.newest(workspaceId))!;
  expect(start.id).toBe("evt_before");
  await open.commit();
  expect(names(await readAfter(start.cursor))).toEqual(["open at the start"]);
  expect(await store.events.cursorAfter(workspaceId, "evt_before")).toEqual(start.cursor);
});

it("a change another coordinator makes wakes this one's waits while a third is stalled in a transaction that wrote an event", async () => {
  const stalledPost = (): ScriptedExecutor => new ScriptedExecutor().on("post", (context) => new Promise((_, reject) => context.signal.addEventListener("abort", () => reject(context.signal.reason), { once: true })));
  const there = await createHarness({ executor: stalledPost() });
  // This coordinator runs nothing (no run slot): every change it hears of is another's.
  const here = await createHarness({ executor: stalledPost(), engine: { maxConcurrent: 0 }, dir: there.dir, location: there.location, masterKey: there.masterKey, clock: there.clock, adminKey: there.adminKey });
  try {
    const admin = (await there.engine.keys.authenticate(there.adminKey))!;
    const account = await there.engine.accounts.create(admin, { platform: "sandbox", username: "elsewhere", password: "pw" });
    const announced: string[] = [];
    // Following the workspace, as a listen stream does: what another coordinator changes in it is announced here.
    here.engine.onChange((action) => announced.push(`${action.params.text as string} ${action.status}`), { workspaceId: there.workspaceId });
    const post = await there.engine.createAction(admin, { account_id: account.id, type: "post", params: { text: "first" } });
    await eventually(() => announced.includes("first running"), { what: "the post to be announced running here" });
    // The stalled coordinator: its open transaction wrote an event, before the cancel's.
    const stalled = hold(() => append(there.store, event("stalled", there.workspaceId)), { on: there.store });
    await stalled.written;
    await there.engine.cancel(admin, post.id);
    await eventually(() => announced.includes("first canceled"), { what: "the cancel to be announced here while the stalled transaction is open" });
    await stalled.commit();
    // Read again once final, it is not announced again: a later change is, after it.
    await there.engine.createAction(admin, { account_id: account.id, type: "post", params: { text: "second" } });
    await eventually(() => announced.includes("second running"), { what: "the second post to be announced running here" });
    expect(announced.filter((change) => change === "first canceled")).toHaveLength(1);
  } finally {
    await endHeld();
    await here.destroy();
    await there.destroy();
  }
});
