import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase, type Db } from "../../src/store/index.js";

let dir: string;
let db: Db;

afterEach(() => {
  db?.close();
  rmSync(dir, { recursive: true, force: true });
});

function open(): Db {
  dir = mkdtempSync(join(tmpdir(), "action-service-statements-"));
  db = openDatabase(join(dir, "action-service.db"));
  return db;
}

describe("prepared statements", () => {
  it("are compiled once per SQL text and connection", () => {
    open();
    expect(db.prepare("SELECT count(*) FROM workspaces")).toBe(db.prepare("SELECT count(*) FROM workspaces"));
    expect(db.prepare("SELECT count(*) FROM accounts")).not.toBe(db.prepare("SELECT count(*) FROM workspaces"));
  });

  it("come back as a fresh one would: a pluck at one call does not leak into the next", () => {
    open();
    expect(db.prepare("SELECT 7 AS n").pluck().get()).toBe(7);
    expect(db.prepare("SELECT 7 AS n").get()).toEqual({ n: 7 });
    // Statements that write have no pluck to reset.
    db.prepare("CREATE TABLE t (x)").run();
    expect(db.prepare("INSERT INTO t VALUES (?)").run(1).changes).toBe(1);
    expect(db.prepare("INSERT INTO t VALUES (?)").run(2).changes).toBe(1);
  });
});
