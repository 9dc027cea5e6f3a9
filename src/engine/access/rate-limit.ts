import { AppError } from "../../domain/errors.js";
import type { Principal } from "../../domain/keys.js";
import type { Store } from "../../store/index.js";
import type { Clock } from "../clock.js";

/** Buckets are swept for ones that have refilled (equal to absent), and blocks for lapsed ones, this often, in takes. */
const SWEEP_EVERY = 1_000;

/** How long a block of tokens taken from a shared bucket may be drawn on here; then what is left of it lapses. */
export const BLOCK_MS = 1_000;

/**
 * Tokens this process took from a caller's shared bucket and has not used yet (a block), with how
 * many it took and has used, and until when (`performance.now()`) it may draw on them.
 */
interface Block {
  size: number;
  left: number;
  until: number;
}

/**
 * One token bucket per caller, shared by every surface (REST, /mcp, /live, the web app):
 * `perMinute` requests a minute, in bursts up to the same number. `take` resolves to 0 when
 * allowed, else the seconds to wait (for Retry-After). On one machine the buckets are this
 * process's; with PostgreSQL (several coordinators) they are rows every coordinator draws from
 * (`store.rateLimits`), so a key gets its limit once, not once per coordinator.
 *
 * Shared buckets are drawn on in blocks (docs/fleet.md, "The rate limit across the fleet"): a take
 * that finds no block here takes one from the bucket, in one statement, as large as this caller's
 * demand here has shown itself (one token at first; twice the last block when that one ran out
 * within its `BLOCK_MS`; as many as were used when it lapsed unused), never more than the bucket
 * refills in `BLOCK_MS`. The takes that follow draw on it with no statement until it runs out or
 * lapses. A key read a thousand times a second costs a statement a second or so; one read now and
 * then, a statement a read, as before. Every request allowed anywhere took its token from the
 * shared bucket; what a block holds for a while can let the fleet go over the key's limit by at
 * most what the bucket refills in `BLOCK_MS` (one block), and what lapses unused is lost to the key.
 */
export class RateLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  #takes = 0;
  /** Shared buckets: the takes of each caller waiting for the statement under way to return. */
  readonly #waiting = new Map<string, Waiter[]>();
  /** Callers with a take under way in the database. */
  readonly #sending = new Set<string>();
  /** Shared buckets: each caller's block here (see the class's comment). */
  readonly #blocks = new Map<string, Block>();

  constructor(
    private readonly perMinute: number,
    private readonly clock: Clock,
    /** Given: the buckets are shared through it (PostgreSQL). */
    private readonly store?: Store,
  ) {}

  async take(caller: string): Promise<number> {
    if (!this.store) return this.#takeHere(caller);
    if (++this.#takes % SWEEP_EVERY === 0) this.#forgetLapsed();
    if (this.#drawOnBlock(caller)) return 0;
    return new Promise<number>((resolve, reject) => {
      const waiting = this.#waiting.get(caller);
      if (waiting) waiting.push({ resolve, reject });
      else this.#waiting.set(caller, [{ resolve, reject }]);
      if (!this.#sending.has(caller)) void this.#takeShared(this.store!, caller);
    });
  }

  /**
   * One statement for every take of `caller` waiting now (DESIGN §11: the bucket is shared, a row
   * every coordinator draws from), which also takes the caller's next block: the first take goes
   * at once; those that come while it is under way wait for it and go together in the next (or
   * draw on the block it brought), so a key read by fifty clients at once costs a statement per
   * round trip at most, and each take still gets a token of the shared bucket or none. Shared
   * buckets refill by the database's clock, not this machine's.
   */
  async #takeShared(store: Store, caller: string): Promise<void> {
    const batch = this.#waiting.get(caller);
    if (!batch) return;
    this.#waiting.delete(caller);
    // Takes that waited for the statement before this one may find its block.
    while (batch.length > 0 && this.#drawOnBlock(caller)) batch.shift()!.resolve(0);
    if (batch.length === 0) return;
    this.#sending.add(caller);
    try {
      const size = this.#nextBlockSize(caller);
      // Never part of a transaction the first caller may be in: the others' takes ride on it.
      const { taken, tokens } = await store.outside(() => store.rateLimits.take(caller, { perMinute: this.perMinute, count: Math.max(size, batch.length) }));
      const served = Math.min(taken, batch.length);
      batch.forEach((waiter, index) => waiter.resolve(index < served ? 0 : this.#wait(tokens)));
      this.#blocks.set(caller, { size: taken, left: taken - served, until: performance.now() + BLOCK_MS });
    } catch (error) {
      for (const waiter of batch) waiter.reject(error);
    } finally {
      this.#sending.delete(caller);
      if (this.#waiting.has(caller)) void this.#takeShared(store, caller);
    }
  }

  /** A token from this caller's block here, if it holds one and has not lapsed: true when taken. */
  #drawOnBlock(caller: string): boolean {
    const block = this.#blocks.get(caller);
    if (!block || block.left < 1 || performance.now() >= block.until) return false;
    block.left -= 1;
    return true;
  }

  /**
   * How many tokens the next block takes: one at first; twice the last when it ran out within its
   * time (demand outran it); as many as were used of it when it lapsed (demand fell) — never more
   * than the bucket refills in `BLOCK_MS`. The last block is let go: what it had left lapses.
   */
  #nextBlockSize(caller: string): number {
    const block = this.#blocks.get(caller);
    this.#blocks.delete(caller);
    if (!block) return 1;
    const size = performance.now() < block.until ? block.size * 2 : block.size - Math.floor(block.left);
    return Math.max(1, Math.min(size, this.#largestBlock));
  }

  /** Blocks lapsed a while ago: the map keeps to recent callers (a caller back later starts again at one token). */
  #forgetLapsed(): void {
    const now = performance.now();
    for (const [caller, block] of this.#blocks) if (now >= block.until + BLOCK_MS) this.#blocks.delete(caller);
  }

  /** What the bucket refills in `BLOCK_MS`: the most a block may hold. */
  get #largestBlock(): number {
    return Math.max(1, Math.floor(this.#ratePerMs * BLOCK_MS));
  }

  #takeHere(caller: string): number {
    const now = this.clock.now().getTime();
    if (++this.#takes % SWEEP_EVERY === 0) this.#forgetRefilled(now);
    const bucket = this.#buckets.get(caller) ?? { tokens: this.perMinute, at: now };
    bucket.tokens = this.#refilled(bucket, now);
    bucket.at = now;
    this.#buckets.set(caller, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return this.#wait(bucket.tokens);
  }

  /** Seconds until a bucket holding `tokens` holds one. */
  #wait(tokens: number): number {
    return Math.max(1, Math.ceil((1 - tokens) / this.#ratePerMs / 1000));
  }

  get #ratePerMs(): number {
    return this.perMinute / 60_000;
  }

  #refilled(bucket: { tokens: number; at: number }, now: number): number {
    return Math.min(this.perMinute, bucket.tokens + (now - bucket.at) * this.#ratePerMs);
  }

  /** A full bucket is the same as none: dropping them keeps the map to recent callers. */
  #forgetRefilled(now: number): void {
    for (const [caller, bucket] of this.#buckets) if (this.#refilled(bucket, now) >= this.perMinute) this.#buckets.delete(caller);
  }
}

interface Waiter {
  resolve: (wait: number) => void;
  reject: (error: unknown) => void;
}

/** The bucket a principal draws from: its key (the stdio owner has none: its workspace). */
export function callerOf(principal: Principal): string {
  return principal.keyId ?? `owner:${principal.workspaceId}`;
}

/** The request error of a refused take (429; the surface adds `Retry-After`). */
export function tooManyRequests(retryAfterSeconds: number): AppError {
  return new AppError("too_many_requests", `Too many requests for this key; retry in ${retryAfterSeconds} s.`, { retry_after: retryAfterSeconds });
}
