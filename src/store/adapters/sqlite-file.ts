import Database from "better-sqlite3";
import { chmodSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { BUSY_TIMEOUT_MS } from "./busy.js";
import { migrationFiles, migrationsDir, pendingMigrations, refuseNewerSchema, versionOf } from "./schema-version.js";

export type Db = Database.Database;

const MIGRATIONS_DIR = migrationsDir("sqlite");

/**
 * Opens (creating if needed) the SQLite file with WAL, an explicit `synchronous`
 * and foreign keys on, then applies pending migrations.
 *
 * Only SQLite opens and closes the database, `-wal` and `-shm` files (decisions: "The database's
 * files are SQLite's alone"): its locks are POSIX locks, owned by the process, and closing any
 * descriptor of one of those files drops every lock this process's connections hold on it. Another
 * program closing its last connection would then think itself the last one, checkpoint and delete
 * the journal under the running service. Here `fs` makes the directory and changes modes, nothing more.
 */
export function openDatabase(file: string): Db {
  const onDisk = file !== ":memory:" && file !== "";
  if (onDisk) makePrivate(dirname(file));
  const db = new Database(file);
  // Before the first read makes the -wal and -shm files: SQLite gives them the database file's mode.
  if (onDisk) keepPrivate(file);
  db.pragma("journal_mode = WAL");
  // NORMAL is durable across application crashes in WAL mode; only an OS crash or
  // power loss can lose the last transactions, never corrupt the file.
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  // Deleted rows (old idempotency records, replaced sessions) are overwritten, not left in free pages.
  db.pragma("secure_delete = ON");
  if (onDisk) keepPrivate(file);
  try {
    migrate(db);
  } catch (error) {
    db.close();
    throw error;
  }
  keepStatements(db);
  return db;
}

/**
 * Compiles each SQL text once per connection: `db.prepare(sql)` returns the statement kept for that
 * text (SQLite's parse and plan are most of a small query's cost). A kept statement comes back
 * with `pluck` off, as a fresh one would. The texts are the repositories' own (a few hundred,
 * some assembled from a fixed set of columns); past `MAX_KEPT_STATEMENTS` the kept ones are let go.
 */
const MAX_KEPT_STATEMENTS = 1_000;

function keepStatements(db: Db): void {
  const compile = db.prepare.bind(db);
  const kept = new Map<string, Database.Statement>();
  db.prepare = ((sql: string) => {
    let statement = kept.get(sql);
    if (!statement) {
      if (kept.size >= MAX_KEPT_STATEMENTS) kept.clear();
      statement = compile(sql);
      kept.set(sql, statement);
    } else if (statement.reader) {
      statement.pluck(false);
    }
    return statement;
  }) as Db["prepare"];
}

/**
 * The data dir is its owner's alone (DESIGN §10): the dir 0700, made before any file in it. SQLite
 * creates the database file in it; `keepPrivate` then sets that file and its -wal/-shm to 0600.
 */
export function makePrivate(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}

/** 0600 for the database file and whichever of its -wal and -shm exist: `chmod` by path, never an open. */
function keepPrivate(file: string): void {
  for (const path of [file, `${file}-wal`, `${file}-shm`]) if (existsSync(path)) chmodSync(path, 0o600);
}

/**
 * Applies numbered `NNN_name.sql` files in order, each in its own transaction. A database migrated
 * by a newer release is refused before anything is applied.
 */
export function migrate(db: Db, dir: string = MIGRATIONS_DIR): void {
  db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
  const files = migrationFiles(dir);
  const applied = db.prepare("SELECT version, name FROM schema_migrations").all() as { version: number; name: string }[];
  refuseNewerSchema(applied, files);
  for (const name of pendingMigrations(files, applied)) {
    const version = versionOf(name);
    const sql = readFileSync(join(dir, name), "utf8");
    // A migration that makes a table again (SQLite cannot change a column's CHECK) runs with foreign
    // keys off, which SQLite allows only outside a transaction, and checks them all before it commits.
    const remakesTables = sql.startsWith("-- pragma: foreign_keys off");
    if (remakesTables) db.pragma("foreign_keys = OFF");
    try {
      db.transaction(() => {
        db.exec(sql);
        if (remakesTables && (db.pragma("foreign_key_check") as unknown[]).length > 0) throw new Error(`migration ${name} left rows whose references are broken`);
        db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(version, name, new Date().toISOString());
      }).immediate();
    } finally {
      if (remakesTables) db.pragma("foreign_keys = ON");
    }
  }
}
