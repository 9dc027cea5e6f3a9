import { afterEach, describe, expect, it } from "vitest";
import { recordAccountEvent } from "../../src/engine/outbox/index.js";
import type { Store } from "../../src/store/index.js";
import { countRows } from "../helpers/sql.js";
import { temporaryStore } from "../helpers/database.js";

let opened: { remove(): Promise<void> } | undefined;

afterEach(async () => {
  await opened?.remove();
  opened = undefined;
});

async function open(): Promise<Store> {
  const temporary = await temporaryStore("action-service-statement-count-");
  opened = temporary;
  return temporary.store;
}

describe("the statement count", () => {
  it("counts each statement once, and a transaction's BEGIN and COMMIT", async () => {
    const store = await open();
    const before = store.statementCount;
    await store.workspaces.count();
    expect(store.statementCount - before).toBe(1);
    await store.transaction(async () => {
      await store.workspaces.count();
      await store.workspaces.count();
    });
    expect(store.statementCount - before).toBe(1 + 4);
  });

  it("counts a savepoint and its release inside a transaction", async () => {
    const store = await open();
    const before = store.statementCount;
    await store.transaction(() => store.transaction(() => store.workspaces.count()));
    expect(store.statementCount - before).toBe(5);
  });

  it("an account with its secrets, which a run reads as it starts, take one statement, each secret opened as its own", async () => {
    const store = await open();
    const now = new Date().toISOString();
    await store.workspaces.insert({ id: "ws_1", name: "one", created_at: now });
    await store.accounts.insert({ id: "acc_1", workspace_id: "ws_1", platform: "sandbox", username: "bob", created_at: now });
    await store.accounts.setSecret("acc_1", "password", "hunter2", now);
    await store.accounts.setSecret("acc_1", "session", '{"cookies":[]}', now);
    const before = store.statementCount;
    const found = await store.accounts.getWithSecrets("acc_1");
    expect(store.statementCount - before).toBe(1);
    expect(found?.secrets).toEqual({ password: "hunter2", totp_secret: undefined, session: '{"cookies":[]}' });
    // The account as `get` reads it: what is held, never a sealed column.
    expect(found?.account).toEqual(await store.accounts.get("acc_1"));
    expect(found?.account).toMatchObject({ has_password: true, has_totp_secret: false, has_session: true });
    expect(Object.keys(found!.account).filter((key) => key.endsWith("_sealed"))).toEqual([]);
    expect(await store.accounts.getWithSecrets("acc_missing")).toBeUndefined();
    await store.accounts.softDelete("acc_1", now);
    expect(await store.accounts.getWithSecrets("acc_1")).toBeUndefined();
  });

  it("an event reads its workspace's endpoints only when one is enabled there: none, one statement; one, a delivery", async () => {
    const store = await open();
    const now = new Date().toISOString();
    for (const id of ["ws_1", "ws_2"]) await store.workspaces.insert({ id, name: id, created_at: now });
    await store.accounts.insert({ id: "acc_1", workspace_id: "ws_1", platform: "sandbox", username: "bob", created_at: now });
    const endpoint = (id: string, workspace_id: string) => store.webhooks.insertEndpoint({ id, workspace_id, url: `http://127.0.0.1:9/${id}`, events: undefined, account_ids: undefined, created_at: now }, "whsec");
    /** Statements and new deliveries of recording the account's event (its read, the insert, and BEGIN and COMMIT). */
    const record = async (): Promise<{ statements: number; deliveries: number }> => {
      const delivered = await countRows(store, "webhook_deliveries");
      const before = store.statementCount;
      await store.transaction(() => recordAccountEvent(store, "acc_1", now));
      return { statements: store.statementCount - before, deliveries: (await countRows(store, "webhook_deliveries")) - delivered };
    };
    expect(await record()).toEqual({ statements: 4, deliveries: 0 });
    // Another workspace's endpoint is not this one's.
    await endpoint("wh_other", "ws_2");
    expect(await record()).toEqual({ statements: 4, deliveries: 0 });
    // One here: the endpoints are read and its delivery written.
    await endpoint("wh_1", "ws_1");
    expect(await record()).toEqual({ statements: 6, deliveries: 1 });
    // Disabled, it is none again.
    await store.transaction(() => store.webhooks.disable("wh_1", "test", now));
    expect(await record()).toEqual({ statements: 4, deliveries: 0 });
  });

  it("the commit point is one fenced statement: noted only for the claim that holds the action, before it ends, while its runner's lease holds", async () => {
    const store = await open();
    const at = new Date().toISOString();
    await store.workspaces.insert({ id: "ws_1", name: "one", created_at: at });
    await store.accounts.insert({ id: "acc_1", workspace_id: "ws_1", platform: "sandbox", username: "bob", created_at: at });
    const runner = (id: string) => store.runners.register({ id, kind: "test", host: "test", pid: process.pid, public_url: null, internal_url: null }, { now: at, leaseMs: 600_000 });
    const leaseNow = await runner("run_a");
    await runner("run_b");
    const action = { workspace_id: "ws_1", account_id: "acc_1", platform: "sandbox", type: "post" as const, params: { text: "hi" }, error_code: undefined, error_message: undefined, result: undefined, finished_at: undefined };
    const insert = (id: string, status: "running" | "succeeded") =>
      store.actions.insert({ ...action, id, status, price: 2, cost: 0, held: false, runner_id: "run_a", lease: 3, committed_at: undefined, created_at: at, updated_at: at });
    await insert("act_running", "running");
    await insert("act_ended", "succeeded");
    const mark = async (id: string, claim: { runnerId: string; lease: number }) => {
      const before = store.statementCount;
      const marked = await store.actions.markCommitted(id, claim, at, leaseNow);
      expect(store.statementCount - before).toBe(1);
      return marked;
    };
    // Another runner's claim, an earlier claim of the same runner, an action that has ended: nothing noted.
    expect(await mark("act_running", { runnerId: "run_b", lease: 3 })).toBe(false);
    expect(await mark("act_running", { runnerId: "run_a", lease: 2 })).toBe(false);
    expect(await mark("act_ended", { runnerId: "run_a", lease: 3 })).toBe(false);
    expect((await store.actions.get("act_running"))?.committed_at).toBeUndefined();
    expect(await mark("act_running", { runnerId: "run_a", lease: 3 })).toBe(true);
    expect((await store.actions.get("act_running"))?.committed_at).toBe(at);
    // The runner's lease run out in the database: nothing noted, whatever the process thinks.
    await insert("act_later", "running");
    await store.runners.expire("run_a", leaseNow);
    expect(await mark("act_later", { runnerId: "run_a", lease: 3 })).toBe(false);
    expect((await store.actions.get("act_later"))?.committed_at).toBeUndefined();
  });
});
