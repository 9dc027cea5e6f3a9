import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { afterEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually, sleep } from "../helpers/scripted-executor.js";

let h: Harness;
let operator: Operator | undefined;
afterEach(async () => {
  await operator?.close();
  operator = undefined;
  await h.destroy();
});

/** The longest the event loop went without a turn while `work` ran, in ms. */
async function longestStall(work: () => Promise<void>): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 5);
  try {
    await work();
  } finally {
    clearInterval(ticker);
  }
  return longest;
}

/**
 * An operator's `sqlite3` session in another process (Python's sqlite3): a second connection to
 * the same file that takes and gives back the write lock when told. Its waits for the lock block
 * that process, never this one's event loop.
 */
interface Operator {
  /** Takes the write lock (`BEGIN IMMEDIATE`), waiting for it as long as it takes. */
  lock(): Promise<void>;
  /** Gives it back (`COMMIT`). */
  unlock(): Promise<void>;
  close(): Promise<void>;
}

const OPERATOR_SCRIPT = `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
for line in sys.stdin:
    db.execute(line.strip())
    print("done", flush=True)
`;

async function holdWriteLock(file: string): Promise<Operator> {
  const child: ChildProcessWithoutNullStreams = spawn("python3", ["-c", OPERATOR_SCRIPT, file]);
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const run = async (statement: string): Promise<void> => {
    child.stdin.write(`${statement}\n`);
    const { value } = await lines.next();
    if (value !== "done") throw new Error(`the operator's ${statement} failed`);
  };
  const operator: Operator = {
    lock: () => run("BEGIN IMMEDIATE"),
    unlock: () => run("COMMIT"),
    async close() {
      child.stdin.end();
      if (child.exitCode === null) await once(child, "exit");
    },
  };
  await operator.lock();
  return operator;
}

describe("a database locked by another process", () => {
  it("neither kills the process nor stalls it: the action waits, then ends consistently once the lock is gone", async () => {
    // The action ends only once the operator (another process) holds the lock, however long its start takes.
    let lockTaken!: () => void;
    const locked = new Promise<void>((resolve) => (lockTaken = resolve));
    const executor = new ScriptedExecutor().on("post", async () => {
      await locked;
      return { post_id: "p1" };
    });
    h = await createHarness({ executor });
    const accountId = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "alice", password: "pw" } })).json.id;
    const created = await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text: "hello" } } });
    await eventually(async () => (await h.store.actions.get(created.json.id))?.status === "running");
    // The lock is taken while the action runs: its ending, the deadline sweep and requests all meet it.
    operator = await holdWriteLock(h.dbFile);
    lockTaken();
    const stall = await longestStall(async () => {
      await sleep(2_000);
      expect((await h.store.actions.get(created.json.id))?.status).toBe("running");
      const refused = await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text: "during the lock" } } });
      expect(refused.status).toBe(503);
      expect(refused.json.error.code).toBe("service_unavailable");
      expect(refused.headers.get("retry-after")).toBe("1");
    });
    // The busy timeout is short and the retries wait between turns of the event loop.
    expect(stall).toBeLessThan(500);
    await operator.unlock();
    await eventually(async () => (await h.store.actions.get(created.json.id))?.status === "succeeded");
    const action = (await h.store.actions.get(created.json.id))!;
    expect(action).toMatchObject({ cost: action.price, held: false });
    const ledger = (await h.store.ledger.entries(h.workspaceId)).reduce((sum, entry) => sum + entry.amount, 0);
    expect(ledger).toBe(await h.store.ledger.balance(h.workspaceId));
    // The refused request created nothing.
    expect(await h.store.actions.list({ workspaceId: h.workspaceId, limit: 10 })).toHaveLength(1);
  });

  it("a challenge paused and answered across a lock still ends with one charge", async () => {
    const executor = new ScriptedExecutor().on("post", async (context) => {
      const answer = await context.challenge({ kind: "email_code", message: "Enter the code." });
      return { answer };
    });
    h = await createHarness({ executor });
    const accountId = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "carol", password: "pw" } })).json.id;
    operator = await holdWriteLock(h.dbFile);
    const created = h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text: "x" } } });
    expect((await created).status).toBe(503);
    await operator.unlock();
    const action = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: accountId, type: "post", params: { text: "x" } } });
    expect(action.json.status).toBe("needs_input");
    await operator.lock();
    const answered = await h.request("POST", `/v1/actions/${action.json.id}/answer`, { body: { answer: "123456" } });
    expect(answered.status).toBe(503);
    expect((await h.store.actions.get(action.json.id))?.status).toBe("needs_input");
    await operator.unlock();
    const retried = await h.request("POST", `/v1/actions/${action.json.id}/answer?wait=5`, { body: { answer: "123456" } });
    expect(retried.json).toMatchObject({ status: "succeeded", result: { answer: "123456" } });
  });
});
