import { afterEach, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/index.js";
import { temporaryStore } from "../helpers/database.js";

// What a transaction asks to be done once it has ended: the change's announcement if it committed,
// else forgetting what it had noted of a change that never was (a real SQLite file, or PostgreSQL
// under test:postgres).
let opened: { remove(): Promise<void> } | undefined;

afterEach(async () => {
  await opened?.remove();
  opened = undefined;
});

async function open(): Promise<Store> {
  const temporary = await temporaryStore("action-service-after-commit-");
  opened = temporary;
  return temporary.store;
}

/** Asks, inside the current transaction (if any), to note `name` as committed or rolled back. */
function ask(store: Store, ended: string[], name: string): void {
  store.afterCommit(
    () => ended.push(`${name} committed`),
    () => ended.push(`${name} rolled back`),
  );
}

describe("what a transaction asks to be done once it ends", () => {
  it("runs once it has committed, not before", async () => {
    const store = await open();
    const ended: string[] = [];
    await store.transaction(async () => {
      ask(store, ended, "a");
      await store.workspaces.count();
      expect(ended).toEqual([]);
    });
    expect(ended).toEqual(["a committed"]);
  });

  it("runs its rolled-back part when the transaction throws, and the error still reaches the caller", async () => {
    const store = await open();
    const ended: string[] = [];
    await expect(
      store.transaction(async () => {
        ask(store, ended, "a");
        throw new Error("refused");
      }),
    ).rejects.toThrow("refused");
    expect(ended).toEqual(["a rolled back"]);
  });

  it("runs the rolled-back part of what a savepoint asked when the savepoint is undone, and the rest once the transaction commits", async () => {
    const store = await open();
    const ended: string[] = [];
    await store.transaction(async () => {
      ask(store, ended, "outer");
      await store
        .transaction(async () => {
          ask(store, ended, "inner");
          throw new Error("inner refused");
        })
        .catch(() => undefined);
      expect(ended).toEqual(["inner rolled back"]);
      ask(store, ended, "after");
    });
    expect(ended).toEqual(["inner rolled back", "outer committed", "after committed"]);
  });

  it("runs at once outside a transaction", async () => {
    const store = await open();
    const ended: string[] = [];
    ask(store, ended, "a");
    expect(ended).toEqual(["a committed"]);
  });
});
