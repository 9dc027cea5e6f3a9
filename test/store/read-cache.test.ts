import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { LOOK_MS } from "../../src/store/adapters/read-cache.js";
import { Sealer, Store, SqliteAdapter, sha256 } from "../../src/store/index.js";

// Two Stores on one SQLite file are two connections, as two processes (serve and `keys revoke`,
// serve and a worker) are: what one writes, the other's kept reads must never hide.
let dir: string;
const stores: Store[] = [];

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const NOW = "2026-11-23T12:00:00.000Z";
const LATER = "2026-11-23T12:00:05.000Z";

async function openTwo(): Promise<[Store, Store]> {
  dir = mkdtempSync(join(tmpdir(), "action-service-read-cache-"));
  const masterKey = randomBytes(32);
  const open = (): Store => {
    const store = new Store(SqliteAdapter.open(join(dir, "action-service.db")), new Sealer(masterKey));
    stores.push(store);
    return store;
  };
  const serve = open();
  await serve.workspaces.insert({ id: "ws_1", name: "one", created_at: NOW });
  await serve.workspaces.insertKey({ id: "key_1", workspace_id: "ws_1", prefix: "as_live_abcd", role: "admin", account_ids: undefined, created_at: NOW, key_hash: sha256("as_live_secret") });
  await serve.accounts.insert({ id: "acc_1", workspace_id: "ws_1", platform: "sandbox", username: "bob", created_at: NOW });
  await serve.actions.insert({
    id: "act_1",
    workspace_id: "ws_1",
    account_id: "acc_1",
    platform: "sandbox",
    type: "post",
    params: { text: "hi" },
    status: "running",
    error_code: undefined,
    error_message: undefined,
    result: undefined,
    price: 1,
    cost: 0,
    held: true,
    runner_id: undefined,
    lease: 0,
    committed_at: undefined,
    created_at: NOW,
    updated_at: NOW,
    finished_at: undefined,
  });
  return [serve, open()];
}

/** Long enough for the next look at the other connections' commits (one stands for LOOK_MS). */
const nextLook = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, LOOK_MS + 1));

describe("reads kept until the database changes", () => {
  it("a key revoked on another connection is refused once the next look is due (within a millisecond)", async () => {
    const [serve, cli] = await openTwo();
    const hash = sha256("as_live_secret");
    expect((await serve.workspaces.keyByHash(hash))?.id).toBe("key_1");
    // Nothing changed: the same kept record, not a new read.
    expect(await serve.workspaces.keyByHash(hash)).toBe(await serve.workspaces.keyByHash(hash));
    expect(await cli.workspaces.revokeKey("key_1", LATER)).toBe(true);
    await nextLook();
    expect(await serve.workspaces.keyByHash(hash)).toBeUndefined();
  });

  it("an action another connection ended is read as ended", async () => {
    const [serve, worker] = await openTwo();
    expect((await serve.actions.get("act_1"))?.status).toBe("running");
    await worker.actions.update("act_1", { status: "succeeded", result: { post_id: "p1" }, finished_at: LATER }, LATER);
    await nextLook();
    expect(await serve.actions.get("act_1")).toMatchObject({ status: "succeeded", result: { post_id: "p1" } });
  });

  it("this connection's own write is read back at once, inside its transaction and after", async () => {
    const [serve] = await openTwo();
    expect((await serve.actions.get("act_1"))?.status).toBe("running");
    await serve.transaction(async () => {
      await serve.actions.update("act_1", { status: "needs_input" }, LATER);
      expect((await serve.actions.get("act_1"))?.status).toBe("needs_input");
    });
    expect((await serve.actions.get("act_1"))?.status).toBe("needs_input");
  });

  it("a kept record cannot be changed by the code that read it", async () => {
    const [serve] = await openTwo();
    const action = (await serve.actions.get("act_1"))!;
    expect(() => {
      (action as { status: string }).status = "canceled";
    }).toThrow(TypeError);
    expect((await serve.actions.get("act_1"))?.status).toBe("running");
  });
});
