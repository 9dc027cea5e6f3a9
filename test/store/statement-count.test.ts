import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Sealer, openStore, type Store } from "../../src/store/index.js";
import { testStoreLocation } from "../helpers/database.js";

let dir: string;
let store: Store | undefined;

afterEach(async () => {
  await store?.close();
  store = undefined;
  rmSync(dir, { recursive: true, force: true });
});

async function open(): Promise<Store> {
  dir = mkdtempSync(join(tmpdir(), "action-service-statement-count-"));
  store = await openStore(await testStoreLocation(dir), new Sealer(randomBytes(32)));
  return store;
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
