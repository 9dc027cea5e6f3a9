import type Database from "better-sqlite3";
import { closeSync, openSync, readSync } from "node:fs";
import type { Db } from "./database.js";

/** Entries kept at most; past it they are all let go (the next reads fill it again). */
const MAX_ENTRIES = 10_000;
/** The first copy of the WAL-index header (sqlite.org/fileformat2.html#walindexformat). */
const WAL_INDEX_HEADER_BYTES = 48;
/** How long one look at that header stands: another process's commit is seen within it. */
export const LOOK_MS = 1;

/**
 * Rows read again and again while nothing is written (the key of every request, an ended action
 * polled by its client), kept until the database changes. Any change drops every entry, so a read
 * never returns what a write made stale: a key revoked by `keys revoke` in another process is
 * refused at the next request.
 *
 * A change is a commit by any connection (another process, the delivery thread, this one) or a
 * row this connection wrote in a transaction still open (`total_changes()`). Commits are seen in
 * the WAL-index header, the first bytes of the `-shm` file every connection maps, which SQLite
 * rewrites at each commit (its `iChange` counter, frame count and salts): one 48-byte read, where
 * asking SQLite (`data_version`) opens a read transaction, whose locks cost as much as the row
 * read itself. That read is made at most once a millisecond (`LOOK_MS`): under load it was one
 * system call per request, ≈ 6 % of the read path, and no client can tell a commit seen a
 * millisecond later (a `keys revoke` process takes longer than that to exit). Without a WAL
 * (`:memory:`) there is no other connection, and no header to read.
 *
 * Entries are frozen: a caller that changed one would change it for every later reader.
 */
export class ReadCache {
  readonly #entries = new Map<string, unknown>();
  readonly #changes: Database.Statement;
  readonly #walIndex: number | undefined;
  /** Without a `-shm` file to read (not in WAL mode): SQLite's own counter of other connections' commits. */
  readonly #dataVersion: Database.Statement | undefined;
  #seenDataVersion = -1;
  readonly #header = Buffer.alloc(WAL_INDEX_HEADER_BYTES);
  readonly #seenHeader = Buffer.alloc(WAL_INDEX_HEADER_BYTES);
  #seenChanges = -1;
  #lookedAt = Number.NEGATIVE_INFINITY;

  constructor(db: Db) {
    this.#changes = db.prepare("SELECT total_changes()").pluck();
    this.#walIndex = db.memory ? undefined : walIndexOf(db);
    this.#dataVersion = db.memory || this.#walIndex !== undefined ? undefined : db.prepare("PRAGMA data_version").pluck();
  }

  /** The kept value for `key`, or `load()`'s (kept when defined). */
  get<T extends object>(key: string, load: () => T | undefined): T | undefined {
    if (this.#changed()) this.#entries.clear();
    const kept = this.#entries.get(key) as T | undefined;
    if (kept) return kept;
    const value = load();
    if (value === undefined) return undefined;
    if (this.#entries.size >= MAX_ENTRIES) this.#entries.clear();
    this.#entries.set(key, Object.freeze(value));
    return value;
  }

  /** Whether anything may have been written since the last look. */
  #changed(): boolean {
    const changes = this.#changes.get() as number;
    const written = changes !== this.#seenChanges;
    this.#seenChanges = changes;
    return this.#committedElsewhere() || written;
  }

  /** Whether another connection committed since the last look. */
  #committedElsewhere(): boolean {
    if (this.#walIndex !== undefined) {
      const now = performance.now();
      if (now - this.#lookedAt < LOOK_MS) return false;
      this.#lookedAt = now;
      readSync(this.#walIndex, this.#header, 0, WAL_INDEX_HEADER_BYTES, 0);
      if (this.#header.equals(this.#seenHeader)) return false;
      this.#header.copy(this.#seenHeader);
      return true;
    }
    if (!this.#dataVersion) return false;
    const version = this.#dataVersion.get() as number;
    const changed = version !== this.#seenDataVersion;
    this.#seenDataVersion = version;
    return changed;
  }

  close(): void {
    if (this.#walIndex !== undefined) closeSync(this.#walIndex);
  }
}

function walIndexOf(db: Db): number | undefined {
  if (db.pragma("journal_mode", { simple: true }) !== "wal") return undefined;
  try {
    return openSync(`${db.name}-shm`, "r");
  } catch {
    return undefined;
  }
}
