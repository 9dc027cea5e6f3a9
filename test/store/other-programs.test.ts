import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, expect, it } from "vitest";
import { holdsLock, openFilesOf } from "../helpers/locks.js";
import { CLI, restClient, startServe, type ServeProcess } from "../helpers/processes.js";

// Issue 26: SQLite's locks are POSIX locks, owned by the process. Other programs open the data
// dir's database beside a running `serve` (its webhook delivery thread on its own connection) and
// close it cleanly: the CLI, the stdio `mcp` a desktop client starts and stops, a plain SQLite
// client. None of them may take the journal from under `serve`, and nothing `serve` acknowledged
// may be lost when it is killed.
const run = promisify(execFile);
/** A loopback webhook endpoint is allowed, so serve has deliveries to send (and its delivery thread runs). */
const SERVE_ENV = { ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "100000", ACTION_SERVICE_WEBHOOK_ALLOW_PRIVATE: "true" };
const dataDir = mkdtempSync(join(tmpdir(), "action-service-other-programs-"));
const dbFile = join(dataDir, "action-service.db");
const ROUNDS = 3;
let service: ServeProcess | undefined;

afterAll(async () => {
  if (service && service.child.exitCode === null) await service.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Waits until serve's delivery thread has its own connection open: two descriptors on the database file. */
async function deliveryThreadConnected(pid: number): Promise<void> {
  for (;;) {
    if (openFilesOf(pid, dataDir).filter((path) => path === dbFile).length >= 2) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A plain SQLite client (Python's, its own SQLite build): opens, reads the account ids, closes cleanly. */
async function plainClientAccountIds(): Promise<string[]> {
  const script = "import sqlite3,sys,json; c=sqlite3.connect(sys.argv[1]); print(json.dumps([r[0] for r in c.execute('SELECT id FROM accounts')])); c.close()";
  const { stdout } = await run("python3", ["-c", script, dbFile]);
  return JSON.parse(stdout) as string[];
}

async function cli(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [CLI, ...args], { env: { ...process.env, ACTION_SERVICE_DATA_DIR: dataDir } });
  return stdout;
}

/** The stdio `mcp` started and stopped as a desktop client does: the accounts it lists. */
async function stdioMcpAccountIds(): Promise<string[]> {
  const client = new Client({ name: "other-programs-test", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI, "mcp"],
      env: { ...getDefaultEnvironment(), ACTION_SERVICE_DATA_DIR: dataDir, ACTION_SERVICE_PORT: "0" },
      stderr: "ignore",
    }),
  );
  const listed = await client.callTool({ name: "list_accounts", arguments: {} });
  await client.close();
  const structured = listed.structuredContent as { data: { id: string }[] };
  return structured.data.map((account) => account.id);
}

it("other programs opening and cleanly closing the database never take serve's journal: every process sees every write, and kill -9 loses nothing acknowledged", async () => {
  service = await startServe({ dataDir, sandboxUrl: "http://127.0.0.1:9", env: SERVE_ENV });
  const pid = service.child.pid!;
  const admin = service.firstKey!;
  const api = restClient(() => service!.url, admin);
  // The delivery thread starts with the first delivery to send: an endpoint (nothing listens there,
  // so every event is retried), then an account, whose event is one.
  expect((await api("POST", "/v1/webhooks", { url: "http://127.0.0.1:9/hook" })).status).toBe(201);
  const first = await api("POST", "/v1/accounts", { platform: "sandbox", username: "other_programs_first", password: "sandbox-password" });
  expect(first.status).toBe(201);
  await deliveryThreadConnected(pid);
  const journal = () => ({ wal: statSync(`${dbFile}-wal`).ino, shm: statSync(`${dbFile}-shm`).ino });
  const journalAtStart = journal();

  const serveIsWhole = (after: string): void => {
    expect(holdsLock(pid, dbFile), `serve holds its lock on the database file after ${after}`).toBe(true);
    expect(openFilesOf(pid, dataDir).filter((path) => path.endsWith("(deleted)")), `serve's files after ${after}`).toEqual([]);
    expect(journal(), `the journal after ${after}`).toEqual(journalAtStart);
  };
  serveIsWhole("start-up");

  const acknowledged: string[] = [first.json.id];
  const cliKeys: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const created = await api("POST", "/v1/accounts", { platform: "sandbox", username: `other_programs_${round}`, password: "sandbox-password" });
    expect(created.status).toBe(201);
    acknowledged.push(created.json.id);

    // A plain SQLite client sees what serve wrote, and closes.
    expect(await plainClientAccountIds()).toEqual(expect.arrayContaining(acknowledged));
    serveIsWhole(`a plain SQLite client closed (round ${round})`);

    // The CLI makes a key and lists keys; serve takes the key at once.
    const key = (await cli("keys", "create", "--role", "operator")).trim().split("\n").at(-1)!;
    cliKeys.push(key);
    expect(await cli("keys", "list")).toContain(key.slice(0, 10));
    serveIsWhole(`keys create and keys list exited (round ${round})`);
    expect((await restClient(() => service!.url, key)("GET", "/v1/accounts")).status).toBe(200);

    // The stdio mcp a desktop client starts and stops sees serve's accounts.
    expect(await stdioMcpAccountIds()).toEqual(expect.arrayContaining(acknowledged));
    serveIsWhole(`a stdio mcp stopped (round ${round})`);

    // And serve sees an account the stdio process's neighbour (the plain client) cannot have missed.
    const listed = await api("GET", "/v1/accounts");
    expect(listed.json.data.map((account: { id: string }) => account.id)).toEqual(expect.arrayContaining(acknowledged));
  }

  // kill -9: whatever serve acknowledged is on disk, in the journal other processes saw.
  await service.crash();
  service = await startServe({ dataDir, sandboxUrl: "http://127.0.0.1:9", env: SERVE_ENV });
  const restarted = restClient(() => service!.url, admin);
  const after = await restarted("GET", "/v1/accounts");
  expect(after.json.data.map((account: { id: string }) => account.id)).toEqual(expect.arrayContaining(acknowledged));
  for (const key of cliKeys) expect((await restClient(() => service!.url, key)("GET", "/v1/accounts")).status).toBe(200);
}, 240_000);
