import { AppError } from "../../domain/errors.js";
import type { Principal } from "../../domain/keys.js";
import type { Store } from "../../store/index.js";
import type { Clock } from "../clock.js";

/** Buckets are swept for ones that have refilled (equal to absent) this often, in takes. */
const SWEEP_EVERY = 1_000;

/**
 * One token bucket per caller, shared by every surface (REST, /mcp, /live, the web app):
 * `perMinute` requests a minute, in bursts up to the same number. `take` resolves to 0 when
 * allowed, else the seconds to wait (for Retry-After). On one machine the buckets are this
 * process's; with PostgreSQL (several coordinators) they are rows every coordinator draws from
 * (`store.rateLimits`), so a key gets its limit once, not once per coordinator.
 */
export class RateLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  #takes = 0;
  /** Shared buckets: the takes of each caller waiting for the statement under way to return. */
  readonly #waiting = new Map<string, Waiter[]>();
  /** Callers with a take under way in the database. */
  readonly #sending = new Set<string>();

  constructor(
    private readonly perMinute: number,
    private readonly clock: Clock,
    /** Given: the buckets are shared through it (PostgreSQL). */
    private readonly store?: Store,
  ) {}

  async take(caller: string): Promise<number> {
    if (!this.store) return this.#takeHere(caller);
    return new Promise<number>((resolve, reject) => {
      const waiting = this.#waiting.get(caller);
      if (waiting) waiting.push({ resolve, reject });
      else this.#waiting.set(caller, [{ resolve, reject }]);
      if (!this.#sending.has(caller)) void this.#takeShared(this.store!, caller);
    });
  }

  /**
   * One statement for every take of `caller` waiting now (DESIGN §11: the bucket is shared, a row
   * every coordinator draws from): the first take goes at once; those that come while it is under
   * way wait for it and go together in the next, so a key read by fifty clients at once costs a
   * statement per round trip, not per request, and each take still gets a token of the shared
   * bucket or none. Shared buckets refill by the database's clock, not this machine's.
   */
  async #takeShared(store: Store, caller: string): Promise<void> {
    const batch = this.#waiting.get(caller);
    if (!batch) return;
    this.#waiting.delete(caller);
    this.#sending.add(caller);
    try {
      // Never part of a transaction the first caller may be in: the others' takes ride on it.
      const { taken, tokens } = await store.outside(() => store.rateLimits.take(caller, { perMinute: this.perMinute, count: batch.length }));
      batch.forEach((waiter, index) => waiter.resolve(index < taken ? 0 : this.#wait(tokens)));
    } catch (error) {
      for (const waiter of batch) waiter.reject(error);
    } finally {
      this.#sending.delete(caller);
      if (this.#waiting.has(caller)) void this.#takeShared(store, caller);
    }
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
