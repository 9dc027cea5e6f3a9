import type { Change, PostgresChangeFeed } from "../change-feed.js";

/** Entries kept at most; past it they are all let go (the next reads fill it again). */
const MAX_ENTRIES = 10_000;
/**
 * How long what the feed has heard vouches for what is kept (DESIGN §11: a revoked key is refused
 * everywhere within one round trip). A kept value is served only while the feed has heard every
 * change committed up to this long ago; past it, reads go to the database until a ping answers.
 */
export const FRESH_MS = 1_000;
/** Part of `FRESH_MS` after which a read asks the feed for a newer word (at most one ping a 0.8 s while reads come). */
const CONFIRM_AFTER = 0.8;
/** Subjects remembered while loads are under way, at most; past it every load under way is not kept. */
const MAX_HEARD = 10_000;

/**
 * PostgreSQL's kept reads (the key of every request, an ended action polled by its client), each
 * dropped when the change feed says its subject changed (`key:<id>`, `action:<id>`): another
 * coordinator's write is heard as a notification, this store's own as `forget` (before its
 * notification comes back). Never a stale permission:
 * - a value is served only while the feed vouches for it (`PostgresChangeFeed.heardUpTo` no older
 *   than `FRESH_MS`: a change committed before then was heard, and dropped it). A LISTEN connection
 *   dead without a word, or reopening, sends reads to the database within a second; reads ask for a
 *   ping (`confirm`) before the word runs out, so a healthy feed goes on vouching while they come,
 *   and an idle coordinator sends none;
 * - a listener call without a change (the feed listened again after a gap, its slow poll) lets
 *   everything go: what was missed is unknown;
 * - a load under way when its subject changed (or everything was let go) is not kept.
 *
 * Entries are frozen: a caller that changed one would change it for every later reader.
 */
export class FeedCache {
  readonly #entries = new Map<string, { value: object; subject: string }>();
  /** Cache keys by the subject that drops them (a key is kept by its hash, dropped by its id). */
  readonly #keysOf = new Map<string, Set<string>>();
  /** Counts the times everything was let go: a load that began before one is not kept. */
  #generation = 0;
  /** Counts subjects heard; each heard while a load is under way is remembered with its count. */
  #heard = 0;
  readonly #heardWhileLoading = new Map<string, number>();
  #loading = 0;
  #unsubscribe: (() => void) | undefined;

  constructor(
    private readonly feed: PostgresChangeFeed,
    private readonly freshMs: number = FRESH_MS,
  ) {}

  async get<T extends object>(key: string, load: () => Promise<T | undefined>, droppedBy: (value: T) => string | undefined): Promise<T | undefined> {
    // Listening from the first kept read on: a store that never keeps one (a CLI command) opens no LISTEN connection for it.
    this.#unsubscribe ??= this.feed.on((change) => this.#heardOf(change));
    const age = performance.now() - this.feed.heardUpTo;
    // A ping before the feed's word runs out: under steady reads, kept values go on being served.
    if (age > this.freshMs * CONFIRM_AFTER) this.feed.confirm();
    if (age <= this.freshMs) {
      const kept = this.#entries.get(key);
      if (kept) return kept.value as T;
    }
    const generation = this.#generation;
    const heard = this.#heard;
    this.#loading += 1;
    let value: T | undefined;
    try {
      value = await load();
    } finally {
      if (--this.#loading === 0) this.#heardWhileLoading.clear();
    }
    if (value === undefined) return undefined;
    const subject = droppedBy(value);
    if (subject === undefined || generation !== this.#generation || (this.#heardWhileLoading.get(subject) ?? 0) > heard) return value;
    if (this.#entries.size >= MAX_ENTRIES) this.#letGo();
    this.#keep(key, Object.freeze(value), subject);
    return value;
  }

  /** `subject` changed (this store wrote it, or a notification said so): what it drops goes. */
  forget(subject: string): void {
    this.#heard += 1;
    if (this.#loading > 0) {
      if (this.#heardWhileLoading.size >= MAX_HEARD) this.#letGo();
      else this.#heardWhileLoading.set(subject, this.#heard);
    }
    const keys = this.#keysOf.get(subject);
    if (!keys) return;
    this.#keysOf.delete(subject);
    for (const key of keys) this.#entries.delete(key);
  }

  close(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    this.#letGo();
  }

  #heardOf(change?: Change): void {
    if (change) this.forget(change.subject);
    else this.#letGo();
  }

  #keep(key: string, value: object, subject: string): void {
    const before = this.#entries.get(key);
    if (before) this.#keysOf.get(before.subject)?.delete(key);
    this.#entries.set(key, { value, subject });
    const keys = this.#keysOf.get(subject);
    if (keys) keys.add(key);
    else this.#keysOf.set(subject, new Set([key]));
  }

  #letGo(): void {
    this.#entries.clear();
    this.#keysOf.clear();
    this.#heardWhileLoading.clear();
    this.#generation += 1;
  }
}
