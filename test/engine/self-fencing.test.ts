import { spawn } from "node:child_process";
import { join } from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import type { PostgresAdapter } from "../../src/store/index.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually, gate, sleep } from "../helpers/scripted-executor.js";

// Self-fencing (DESIGN §11): a runner that cannot renew its lease stops its runs before the lease
// would end, and a run woken after that writes nothing. The database really does not answer the
// renewals: on SQLite another process holds the write lock; on PostgreSQL (test:postgres) another
// session holds the runner's row locked. Leases are short here (3 s, renewed every 200 ms).

const LEASE_MS = 3_000;

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.destroy();
});

/** Keeps the database from renewing `runnerId`'s lease until the returned function is called. */
async function blockRenewals(h: Harness, runnerId: string): Promise<() => Promise<void>> {
  if (h.store.dialect === "postgres") {
    const client = new pg.Client({ connectionString: (h.store.adapter as PostgresAdapter).url });
    client.on("error", () => undefined);
    await client.connect();
    await client.query("BEGIN");
    await client.query("SELECT id FROM runners WHERE id = $1 FOR UPDATE", [runnerId]);
    return async () => {
      await client.query("ROLLBACK");
      await client.end();
    };
  }
  // Another program holds SQLite's write lock (never a second connection in this process: closing it would drop this process's locks).
  const holder = spawn(
    process.execPath,
    ["-e", 'const db = new (require("better-sqlite3"))(process.argv[1]); db.prepare("BEGIN IMMEDIATE").run(); console.log("locked"); process.stdin.on("end", () => { db.prepare("ROLLBACK").run(); db.close(); }); process.stdin.resume();', h.dbFile],
    { cwd: join(import.meta.dirname, "..", ".."), stdio: ["pipe", "pipe", "inherit"] },
  );
  const exited = new Promise<void>((resolve) => holder.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    holder.stdout!.once("data", () => resolve());
    holder.once("exit", (code) => reject(new Error(`the lock holder exited (${code})`)));
  });
  return async () => {
    holder.stdin!.end();
    await exited;
  };
}

describe("a runner whose lease cannot be renewed", () => {
  it("stops its runs before the lease ends, and a run woken after that writes nothing; the action runs again once recovered", async () => {
    const started = gate();
    const woken = gate();
    let runs = 0;
    let abortedAt: number | undefined;
    let wokenWrite: string | undefined;
    const executor = new ScriptedExecutor().on("post", async (context) => {
      runs += 1;
      if (runs > 1) return { post_id: "p2" };
      started.open();
      try {
        await sleep(60_000, context.signal);
      } catch {
        abortedAt = Date.now();
      }
      // A driver that goes on after the abort (as one stuck in a page would) tries its commit point.
      await woken.promise;
      try {
        await context.commit();
        wokenWrite = "written";
      } catch {
        wokenWrite = "refused";
      }
      throw new Error("the first run ends");
    });
    const h = await createHarness({ executor, engine: { runner: { leaseMs: LEASE_MS, heartbeatMs: 200, stopGraceMs: 100 } } });
    harnesses.push(h);
    const account = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "fenced", password: "pw" } })).json.id;
    const actionId = (await h.request("POST", "/v1/actions", { body: { account_id: account, type: "post", params: { text: "once" } } })).json.id;
    await started.promise;
    const heldBy = (await h.store.actions.get(actionId))!.runner_id!;

    const release = await blockRenewals(h, heldBy);
    let released = false;
    try {
      await eventually(() => abortedAt !== undefined, { what: "the run to be stopped while its lease is not renewed" });
      // No renewal went through meanwhile: the lease's end in the store is the one the run had.
      const lease = (await h.store.runners.list()).find((runner) => runner.id === heldBy)!;
      expect(abortedAt!).toBeLessThan(Date.parse(lease.lease_expires_at));
      await release();
      released = true;
    } finally {
      if (!released) await release();
    }

    woken.open();
    await eventually(() => wokenWrite, { what: "the woken run's write" });
    expect(wokenWrite).toBe("refused");
    // Recovered (its lease was given up) and run again, by a run that holds it.
    const ended = await eventually(async () => {
      const action = await h.store.actions.get(actionId);
      return action?.status === "succeeded" || action?.status === "failed" ? action : undefined;
    });
    expect(ended).toMatchObject({ status: "succeeded", result: { post_id: "p2" } });
    expect(ended.committed_at).toBeUndefined();
    expect(ended.lease).toBe(2);
    expect(runs).toBe(2);
  });
});
