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
});
