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

  constructor(
    private readonly perMinute: number,
    private readonly clock: Clock,
    /** Given: the buckets are shared through it (PostgreSQL). */
    private readonly store?: Store,
  ) {}

  async take(caller: string): Promise<number> {
    if (!this.store) return this.#takeHere(caller);
    // Shared buckets refill by the database's clock (DESIGN §11), not this machine's.
    const { taken, tokens } = await this.store.rateLimits.take(caller, { perMinute: this.perMinute });
    return taken ? 0 : this.#wait(tokens);
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

/** The bucket a principal draws from: its key (the stdio owner has none: its workspace). */
export function callerOf(principal: Principal): string {
  return principal.keyId ?? `owner:${principal.workspaceId}`;
}

/** The request error of a refused take (429; the surface adds `Retry-After`). */
export function tooManyRequests(retryAfterSeconds: number): AppError {
  return new AppError("too_many_requests", `Too many requests for this key; retry in ${retryAfterSeconds} s.`, { retry_after: retryAfterSeconds });
}
