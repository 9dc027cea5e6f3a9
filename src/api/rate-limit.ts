import type { Clock } from "../engine/clock.js";

/**
 * A token bucket per caller: `perMinute` requests a minute, in bursts up to the same
 * number. `take` returns 0 when allowed, else the seconds to wait (for Retry-After).
 */
export class RateLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly perMinute: number,
    private readonly clock: Clock,
  ) {}

  take(caller: string): number {
    const now = this.clock.now().getTime();
    const ratePerMs = this.perMinute / 60_000;
    const bucket = this.#buckets.get(caller) ?? { tokens: this.perMinute, at: now };
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.at) * ratePerMs);
    bucket.at = now;
    this.#buckets.set(caller, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / ratePerMs / 1000));
  }
}
