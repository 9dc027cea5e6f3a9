import Database from "better-sqlite3";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { Sealer, SqliteAdapter, Store, loadMasterKey, openDatabase } from "../../src/store/index.js";
import { migrate } from "../../src/store/adapters/sqlite-file.js";
import { holdsLock } from "../helpers/locks.js";

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("database", () => {
  it("opens with WAL, synchronous NORMAL and foreign keys, and applies migrations once", () => {
    dir = mkdtempSync(join(tmpdir(), "as-db-"));
    const file = join(dir, "nested", "a.db");
    const db = openDatabase(file);
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.pragma("synchronous", { simple: true })).toBe(1);
    expect(db.pragma("foreign_keys", { simple: true })).toBe(1);
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();
    expect(tables).toEqual(expect.arrayContaining(["accounts", "actions", "api_keys", "challenges", "credit_ledger", "idempotency_keys", "payments", "runners", "workspaces"]));
    db.close();
    const again = openDatabase(file);
    // Each migration file once, also when opened again.
    const migrations = readdirSync(join(import.meta.dirname, "..", "..", "migrations", "sqlite")).filter((name) => name.endsWith(".sql"));
    expect(migrations.length).toBeGreaterThanOrEqual(5);
    expect(again.prepare("SELECT count(*) FROM schema_migrations").pluck().get()).toBe(migrations.length);
    expect(() => again.prepare("INSERT INTO accounts (id, workspace_id, platform, username, created_at, updated_at) VALUES ('a', 'missing', 'p', 'u', 't', 't')").run()).toThrow(
      /FOREIGN KEY/,
    );
    expect(() => again.prepare("INSERT INTO workspaces (id, name, balance, created_at) VALUES ('w', 'n', -1, 't')").run()).toThrow(/CHECK/);
    again.close();
  });

  it("creates a master key file with mode 0600 once, and prefers the configured key", () => {
    dir = mkdtempSync(join(tmpdir(), "as-key-"));
    const key = loadMasterKey(dir, undefined);
    expect(key).toHaveLength(32);
    expect(statSync(join(dir, "master.key")).mode & 0o777).toBe(0o600);
    expect(loadMasterKey(dir, undefined).equals(key)).toBe(true);
    const configured = Buffer.alloc(32, 7);
    expect(loadMasterKey(dir, configured)).toBe(configured);
  });

  it("keeps the data dir private to its owner: the dir 0700, the database, -wal, -shm and key files 0600", () => {
    dir = mkdtempSync(join(tmpdir(), "as-db-"));
    const data = join(dir, "data");
    mkdirSync(data, { mode: 0o755 });
    const db = openDatabase(join(data, "action-service.db"));
    db.prepare("CREATE TABLE t (x)").run();
    loadMasterKey(data, undefined);
    expect(statSync(data).mode & 0o777).toBe(0o700);
    const files = readdirSync(data);
    expect(files).toEqual(expect.arrayContaining(["action-service.db", "action-service.db-wal", "action-service.db-shm", "master.key"]));
    for (const file of files) expect({ file, mode: statSync(join(data, file)).mode & 0o777 }).toEqual({ file, mode: 0o600 });
    db.close();
  });

  it("a second connection opened and a store closed in this process leave the first one's locks, so another program's close keeps the journal", async () => {
    dir = mkdtempSync(join(tmpdir(), "as-db-"));
    const file = join(dir, "action-service.db");
    const sealer = new Sealer(Buffer.alloc(32, 1));
    const first = new Store(SqliteAdapter.open(file), sealer);
    first.sqlite!.prepare("CREATE TABLE t (x)").run();
    // A second store (as the delivery thread opens one), read through its cache, then closed.
    const second = new Store(SqliteAdapter.open(file), sealer);
    expect(await second.workspaces.keyByHash("no-such-key")).toBeUndefined();
    await second.close();
    expect(holdsLock(process.pid, file)).toBe(true);
    expect(holdsLock(process.pid, `${file}-shm`)).toBe(true);
    // Another program opens, reads and closes cleanly: it is not the last connection, so the journal stays.
    execFileSync("python3", ["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('SELECT count(*) FROM t').fetchone(); c.close()", file]);
    expect(readdirSync(dir)).toEqual(expect.arrayContaining(["action-service.db-wal", "action-service.db-shm"]));
    first.sqlite!.prepare("INSERT INTO t VALUES (1)").run();
    const seen = execFileSync("python3", ["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('SELECT count(*) FROM t').fetchone()[0]); c.close()", file], { encoding: "utf8" });
    expect(seen.trim()).toBe("1");
    await first.close();
  });
});

describe("migration 011 (managed accounts)", () => {
  it("makes the accounts table again with foreign keys off and checked: signed_out becomes needs_auth, rows, order and references kept", () => {
    dir = mkdtempSync(join(tmpdir(), "as-mig-"));
    const all = join(import.meta.dirname, "..", "..", "migrations", "sqlite");
    const before = join(dir, "before");
    mkdirSync(before);
    for (const name of readdirSync(all).filter((name) => Number.parseInt(name, 10) < 11)) copyFileSync(join(all, name), join(before, name));
    const db = new Database(join(dir, "a.db"));
    db.pragma("foreign_keys = ON");
    migrate(db, before);
    db.exec(`INSERT INTO workspaces (id, name, balance, created_at) VALUES ('w', 'n', 0, 't');
      INSERT INTO accounts (id, workspace_id, platform, username, status, created_at, updated_at) VALUES ('acc_b', 'w', 'sandbox', 'b', 'signed_out', 't', 't');
      INSERT INTO accounts (id, workspace_id, platform, username, status, created_at, updated_at) VALUES ('acc_a', 'w', 'sandbox', 'a', 'connected', 't', 't');
      INSERT INTO actions (id, workspace_id, account_id, platform, type, params, status, price, created_at, updated_at) VALUES ('act_1', 'w', 'acc_b', 'sandbox', 'post', '{}', 'failed', 2, 't', 't');`);

    migrate(db, all);
    // Same created_at: the rowid keeps the order they were added in.
    expect(db.prepare("SELECT id, status FROM accounts ORDER BY created_at, rowid").all()).toEqual([
      { id: "acc_b", status: "needs_auth" },
      { id: "acc_a", status: "connected" },
    ]);
    expect(db.pragma("foreign_key_check")).toEqual([]);
    expect(db.pragma("foreign_keys", { simple: true })).toBe(1);
    expect(() => db.prepare("UPDATE accounts SET status = 'signed_out' WHERE id = 'acc_a'").run()).toThrow(/CHECK/);
    expect(() => db.prepare("DELETE FROM accounts WHERE id = 'acc_b'").run()).toThrow(/FOREIGN KEY/);
    db.close();
  });
});
