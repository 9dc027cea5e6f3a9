import ipaddr from "ipaddr.js";

/** Senders whose recent mails are remembered at most; past it the one heard from longest ago is forgotten. */
export const SENDERS_REMEMBERED = 10_000;
const MINUTE_MS = 60_000;

/**
 * Who a connection counts as for the rate limit: an IPv4 address (an IPv4-mapped IPv6 one too) is
 * itself; an IPv6 address is its /64, the block one host or one customer is given, so a sender
 * cannot become someone new by taking another address from it.
 */
export function senderKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === "ipv4") return parsed.toString();
  const network = (parsed as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `${network.join(":")}::/64`;
}

/**
 * Mails accepted per sender (see `senderKey`) in a sliding minute. The table is bounded by
 * forgetting the sender heard from longest ago, one at a time: new senders arriving without end
 * push out only the quietest, never the count of one sending now (emptying the whole table did).
 */
export class SenderLimit {
  /** Times of each sender's recent mails; a Map keeps insertion order, so its first key is the least recently heard. */
  readonly #taken = new Map<string, number[]>();

  constructor(
    private readonly perMinute: number,
    private readonly remembered = SENDERS_REMEMBERED,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts a mail from `address`; false when its sender is already at the limit (the mail is not counted). */
  take(address: string): boolean {
    const sender = senderKey(address);
    const now = this.now();
    const recent = (this.#taken.get(sender) ?? []).filter((at) => now - at < MINUTE_MS);
    const allowed = recent.length < this.perMinute;
    if (allowed) recent.push(now);
    // Deleted and set again: the sender moves to the end, the most recently heard.
    this.#taken.delete(sender);
    this.#taken.set(sender, recent);
    while (this.#taken.size > this.remembered) this.#taken.delete(this.#taken.keys().next().value!);
    return allowed;
  }
}
