import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/database.js";
import { Sealer, Store, sha256 } from "../../src/store/index.js";
import { LOOK_MS } from "../../src/store/read-cache.js";

// Two Stores on one SQLite file are two connections, as two processes (serve and `keys revoke`,
// serve and a worker) are: what one writes, the other's kept reads must never hide.
let dir: string;
const stores: Store[] = [];

afterEach(() => {
  for (const store of stores.splice(0)) store.close();
  rmSync(dir, { recursive: true, force: true });
});

const NOW = "2026-11-23T12:00:00.000Z";
const LATER = "2026-11-23T12:00:05.000Z";

function openTwo(): [Store, Store] {
  dir = mkdtempSync(join(tmpdir(), "action-service-read-cache-"));
  const masterKey = randomBytes(32);
  const open = (): Store => {
    const store = new Store(openDatabase(join(dir, "action-service.db")), new Sealer(masterKey));
    stores.push(store);
    return store;
  };
  const serve = open();
  serve.workspaces.insert({ id: "ws_1", name: "one", created_at: NOW });
  serve.workspaces.insertKey({ id: "key_1", workspace_id: "ws_1", prefix: "as_live_abcd", role: "admin", account_ids: undefined, created_at: NOW, key_hash: sha256("as_live_secret") });
  serve.accounts.insert({ id: "acc_1", workspace_id: "ws_1", platform: "sandbox", username: "bob", created_at: NOW });
  serve.actions.insert({
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
    const [serve, cli] = openTwo();
    const hash = sha256("as_live_secret");
    expect(serve.workspaces.keyByHash(hash)?.id).toBe("key_1");
    // Nothing changed: the same kept record, not a new read.
    expect(serve.workspaces.keyByHash(hash)).toBe(serve.workspaces.keyByHash(hash));
    expect(cli.workspaces.revokeKey("key_1", LATER)).toBe(true);
    await nextLook();
    expect(serve.workspaces.keyByHash(hash)).toBeUndefined();
  });

  it("an action another connection ended is read as ended", async () => {
    const [serve, worker] = openTwo();
    expect(serve.actions.get("act_1")?.status).toBe("running");
    worker.transaction(() => worker.actions.update("act_1", { status: "succeeded", result: { post_id: "p1" }, finished_at: LATER }, LATER));
    await nextLook();
    expect(serve.actions.get("act_1")).toMatchObject({ status: "succeeded", result: { post_id: "p1" } });
  });

  it("this connection's own write is read back at once, inside its transaction and after", () => {
    const [serve] = openTwo();
    expect(serve.actions.get("act_1")?.status).toBe("running");
    serve.transaction(() => {
      serve.actions.update("act_1", { status: "needs_input" }, LATER);
      expect(serve.actions.get("act_1")?.status).toBe("needs_input");
    });
    expect(serve.actions.get("act_1")?.status).toBe("needs_input");
  });

  it("a kept record cannot be changed by the code that read it", () => {
    const [serve] = openTwo();
    const action = serve.actions.get("act_1")!;
    expect(() => {
      (action as { status: string }).status = "canceled";
    }).toThrow(TypeError);
    expect(serve.actions.get("act_1")?.status).toBe("running");
  });
});
