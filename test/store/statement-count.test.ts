import { afterEach, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/index.js";
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

  it("an account's secrets, which a run reads as it starts, take one statement, each opened as its own", async () => {
    const store = await open();
    const now = new Date().toISOString();
    await store.workspaces.insert({ id: "ws_1", name: "one", created_at: now });
    await store.accounts.insert({ id: "acc_1", workspace_id: "ws_1", platform: "sandbox", username: "bob", created_at: now });
    await store.accounts.setSecret("acc_1", "password", "hunter2", now);
    await store.accounts.setSecret("acc_1", "session", '{"cookies":[]}', now);
    const before = store.statementCount;
    expect(await store.accounts.getSecrets("acc_1")).toEqual({ password: "hunter2", totp_secret: undefined, session: '{"cookies":[]}' });
    expect(store.statementCount - before).toBe(1);
    expect(await store.accounts.getSecrets("acc_missing")).toEqual({ password: undefined, totp_secret: undefined, session: undefined });
  });
});
