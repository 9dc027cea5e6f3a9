import type { Clock } from "../engine/clock.js";

/** Texts one inbox's SMS URL takes in a minute, by default. */
export const SMS_TEXTS_PER_MINUTE = 30;
/** Texts one inbox's SMS URL takes at once (a phone sending the texts it held while offline). */
export const SMS_BURST = 30;
/** Inboxes whose counts are kept at once, by default. */
export const SMS_TRACKED_INBOXES = 10_000;

export interface SmsLimits {
  textsPerMinute: number;
  burst: number;
  trackedInboxes: number;
}

/**
 * How many texts each inbox's SMS URL takes: a token bucket per inbox, `burst` at once, then
 * `textsPerMinute`. The buckets are this process's memory, not rows: the limit bounds a flood at
 * the cost of the process that takes it (several coordinators behind one public URL each count
 * their own), while what an inbox keeps is bounded in the store (its unused messages). Only inboxes
 * whose token was found come here, so unknown tokens cannot fill the table; past `trackedInboxes`
 * the least recently texted is forgotten (a full bucket again), never the whole table at once.
 */
export class SmsRateLimit {
  /** By inbox, least recently texted first (a Map keeps the order entries were set in). */
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly limits: SmsLimits,
    private readonly clock: Clock,
  ) {}

  /** 0 when the inbox may take one more text now (it is counted), else the whole seconds until it may. */
  take(inbox: string): number {
    const { textsPerMinute, burst, trackedInboxes } = this.limits;
    const now = this.clock.now().getTime();
    const bucket = this.#buckets.get(inbox);
    // A clock set back refills nothing (and takes nothing back).
    const tokens = bucket ? Math.min(burst, bucket.tokens + (Math.max(0, now - bucket.at) * textsPerMinute) / 60_000) : burst;
    const taken = tokens >= 1;
    this.#buckets.delete(inbox);
    this.#buckets.set(inbox, { tokens: taken ? tokens - 1 : tokens, at: now });
    if (this.#buckets.size > trackedInboxes) this.#buckets.delete(this.#buckets.keys().next().value!);
    return taken ? 0 : Math.max(1, Math.ceil(((1 - tokens) * 60) / textsPerMinute));
  }
}
