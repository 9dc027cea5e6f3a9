import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ChangesElsewhere } from "../../src/engine/execution/index.js";
import { silentLogger } from "../../src/engine/logger.js";
import { createMcpServer } from "../../src/mcp/server.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually } from "../helpers/scripted-executor.js";

// Two engines on one data dir stand for two processes (a `serve` and a stdio `mcp`): a status change
// one of them makes reaches the other's waits and MCP subscriptions as if it had made it itself.
const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0).reverse()) await h.destroy();
});

/** A post that runs until its run is aborted (canceled): it never ends by itself. */
function endless(): ScriptedExecutor {
  return new ScriptedExecutor().on("post", (context) => new Promise((_, reject) => context.signal.addEventListener("abort", () => reject(context.signal.reason), { once: true })));
}

async function twoProcesses(): Promise<{ here: Harness; there: Harness }> {
  const there = await createHarness({ executor: endless() });
  const here = await createHarness({ executor: endless(), dir: there.dir, location: there.location, masterKey: there.masterKey, clock: there.clock, adminKey: there.adminKey });
  open.push(there, here);
  return { here, there };
}

async function runningPost(h: Harness): Promise<string> {
  const principal = (await h.engine.keys.authenticate(h.adminKey))!;
  const account = await h.engine.accounts.create(principal, { platform: "sandbox", username: `u${Date.now()}`, password: "pw" });
  const action = await h.engine.createAction(principal, { account_id: account.id, type: "post", params: { text: "hi" } });
  await eventually(async () => (await h.engine.getAction(principal, action.id)).status !== "queued");
  return action.id;
}

describe("status changes made by another process", () => {
  it("wake a wait here within a moment, not at its timeout", async () => {
    const { here, there } = await twoProcesses();
    const id = await runningPost(there);
    const waiting = here.engine.waitFor(id, 20);
    const started = Date.now();
    await there.engine.cancel((await there.engine.keys.authenticate(there.adminKey))!, id);
    const seen = await waiting;
    expect(seen.status).toBe("canceled");
    // Woken by the change, not by the wait's 20 s (a bound loose enough for a loaded machine).
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("reach an MCP client subscribed here (resources/updated)", async () => {
    const { here, there } = await twoProcesses();
    const id = await runningPost(there);
    const server = createMcpServer({ engine: here.engine, principal: (await here.engine.keys.authenticate(here.adminKey))!, logger: silentLogger });
    const client = new Client({ name: "elsewhere-test", version: "1.0.0" });
    const updates: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => void updates.push(notification.params.uri));
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    await client.connect(clientSide);
    await client.subscribeResource({ uri: `action://${id}` });
    await there.engine.cancel((await there.engine.keys.authenticate(there.adminKey))!, id);
    await eventually(() => updates.length > 0);
    expect(updates).toEqual([`action://${id}`]);
    await client.close();
    await server.close();
  });
});

describe("status changes made by this process", () => {
  it("reach its listeners as its own, in order, each once, never first from the change feed as another's", async () => {
    const h = await createHarness({ executor: new ScriptedExecutor().on("post", async () => ({ post_id: "p1" })) });
    open.push(h);
    const seen = new Map<string, string[]>();
    h.engine.core.lifecycle.events.on("change", (action, origin) => seen.set(action.id, [...(seen.get(action.id) ?? []), `${origin} ${action.status}`]));
    const principal = (await h.engine.keys.authenticate(h.adminKey))!;
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const account = await h.engine.accounts.create(principal, { platform: "sandbox", username: `own${i}`, password: "pw" });
      ids.push((await h.engine.createAction(principal, { account_id: account.id, type: "post", params: { text: `hi ${i}` } })).id);
    }
    for (const id of ids) expect((await h.engine.waitFor(id, 20)).status).toBe("succeeded");
    for (const id of ids) expect(seen.get(id), id).toEqual(["here queued", "here running", "here succeeded"]);
  });

  it("reach its listeners as its own when the change feed reads them before the commit's reply is back", async () => {
    const h = await createHarness({ executor: new ScriptedExecutor().on("post", async () => ({ post_id: "p1" })) });
    open.push(h);
    const seen: string[] = [];
    h.engine.core.lifecycle.events.on("change", (action, origin) => seen.push(`${origin} ${action.type} ${action.status}`));
    const feed = new ChangesElsewhere(h.store, h.engine.core.lifecycle);
    await feed.start();
    // The database has committed; the reply is late (a slow network): the feed looks meanwhile.
    const transaction = h.store.adapter.transaction.bind(h.store.adapter);
    vi.spyOn(h.store.adapter, "transaction").mockImplementation(async (work, options) => {
      const value = await transaction(work, options);
      await feed.look();
      return value;
    });
    const principal = (await h.engine.keys.authenticate(h.adminKey))!;
    const account = await h.engine.accounts.create(principal, { platform: "sandbox", username: "late-replies", password: "pw" });
    const action = await h.engine.createAction(principal, { account_id: account.id, type: "post", params: { text: "hi" } });
    expect((await h.engine.waitFor(action.id, 20)).status).toBe("succeeded");
    feed.stop();
    expect(seen).toEqual(["here post queued", "here post running", "here post succeeded"]);
  });

  it("are told apart from another action's change with the same status and time while they commit", async () => {
    const h = await createHarness({ executor: new ScriptedExecutor().on("post", async () => ({ post_id: "p1" })) });
    open.push(h);
    const principal = (await h.engine.keys.authenticate(h.adminKey))!;
    const account = await h.engine.accounts.create(principal, { platform: "sandbox", username: "same-time", password: "pw" });
    const action = await h.engine.createAction(principal, { account_id: account.id, type: "post", params: { text: "hi" } });
    const { lifecycle } = h.engine.core;
    await h.store.transaction(async () => {
      lifecycle.announce(action);
      expect(lifecycle.isCommitting(action)).toBe(true);
      expect(lifecycle.isCommitting({ ...action, id: "act_another" })).toBe(false);
    });
    expect(lifecycle.isCommitting(action)).toBe(false);
  });
});
