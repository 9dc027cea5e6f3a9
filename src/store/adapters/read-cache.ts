import type Database from "better-sqlite3";
import type { Db } from "./sqlite-file.js";

/** Entries kept at most; past it they are all let go (the next reads fill it again). */
const MAX_ENTRIES = 10_000;
/** How long one look at `data_version` stands: another connection's commit is seen within it. */
export const LOOK_MS = 1;

/**
 * Rows read again and again while nothing is written (the key of every request, an ended action
 * polled by its client), kept until the database changes. Any change drops every entry, so a read
 * never returns what a write made stale: a key revoked by `keys revoke` in another process is
 * refused at the next request.
 *
 * A change is a commit by any connection (another process, the delivery thread, this one) or a
 * statement this connection sent that may write, in a transaction still open or not (`writes`,
 * counted as each is sent: a number in memory, where asking SQLite's `total_changes()` was one
 * more statement per read). Commits by other
 * connections are seen in SQLite's `PRAGMA data_version`, asked at most once a millisecond
 * (`LOOK_MS`): it opens a read transaction, whose locks cost as much as the row read itself, and
 * under load one look serves dozens of requests; no client can tell a commit seen a millisecond
 * later (a `keys revoke` process takes longer than that to exit). The `-shm` file is never read
 * through a descriptor of our own: closing it would drop this process's SQLite locks on it
 * (decisions: "The database's files are SQLite's alone"). `:memory:` has no other connection.
 *
 * Entries are frozen: a caller that changed one would change it for every later reader.
 */
export class ReadCache {
  readonly #entries = new Map<string, unknown>();
  /** SQLite's counter of other connections' commits; none for `:memory:`, which has no other. */
  readonly #dataVersion: Database.Statement | undefined;
  #seenDataVersion = -1;
  #seenChanges = -1;
  #lookedAt = Number.NEGATIVE_INFINITY;
  /** Counts the times everything was let go: a load that began before one is not kept. */
  #generation = 0;

  constructor(
    db: Db,
    /** How many statements this connection has sent that may have written (never goes down). */
    private readonly writes: () => number,
  ) {
    this.#dataVersion = db.memory ? undefined : db.prepare("PRAGMA data_version").pluck();
  }

  /**
   * The kept value for `key`, or `load()`'s (kept when defined). `load()` awaits, and other reads
   * and writes go on meanwhile: what it brings is kept only if nothing was let go since it began
   * (a change another read noticed meanwhile), and a write that lands while it runs moves the
   * counters, so the next look drops it.
   */
  async get<T extends object>(key: string, load: () => Promise<T | undefined>): Promise<T | undefined> {
    this.#letGoIfChanged();
    const kept = this.#entries.get(key) as T | undefined;
    if (kept) return kept;
    const generation = this.#generation;
    const value = await load();
    if (value === undefined) return undefined;
    this.#letGoIfChanged();
    if (generation !== this.#generation) return value;
    if (this.#entries.size >= MAX_ENTRIES) this.#letGo();
    this.#entries.set(key, Object.freeze(value));
    return value;
  }

  #letGoIfChanged(): void {
    if (this.#changed()) this.#letGo();
  }

  #letGo(): void {
    this.#entries.clear();
    this.#generation += 1;
  }

  /** Whether anything may have been written since the last look. */
  #changed(): boolean {
    const changes = this.writes();
    const written = changes !== this.#seenChanges;
    this.#seenChanges = changes;
    return this.#committedElsewhere() || written;
  }

  /** Whether another connection committed since the last look. */
  #committedElsewhere(): boolean {
    if (!this.#dataVersion) return false;
    const now = performance.now();
    if (now - this.#lookedAt < LOOK_MS) return false;
    this.#lookedAt = now;
    const version = this.#dataVersion.get() as number;
    const changed = version !== this.#seenDataVersion;
    this.#seenDataVersion = version;
    return changed;
  }
}
