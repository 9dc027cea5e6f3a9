import type { ChallengeKind } from "./challenges.js";

/** Who gave a challenge's latest answer (DESIGN §15): shown on the action as `answered_by`. */
export const ANSWERED_BY = ["inbox", "totp", "person", "agent"] as const;
export type AnsweredBy = (typeof ANSWERED_BY)[number];

/** The channels an inbox receives on, and the challenge each answers. */
export const INBOX_CHANNELS = ["email", "sms"] as const;
export type InboxChannel = (typeof INBOX_CHANNELS)[number];
export const CHANNEL_OF: Partial<Record<ChallengeKind, InboxChannel>> = { email_code: "email", sms_code: "sms" };

/** How a message came in: the SMTP listener, the SMS URL, or pushed through the API or MCP. */
export type MessageSource = "smtp" | "sms_url" | "pushed";

/** A message answers a challenge that starts within this long after it arrived. */
export const MESSAGE_ANSWERS_WITHIN_MS = 10 * 60 * 1000;
/** An account keeps at most this many unused messages: beyond it, the oldest are dropped. */
export const MAX_UNUSED_MESSAGES = 100;
/** How many messages a challenge considers at most (the first to arrive wins; the rest are there if it was taken). */
export const MAX_CANDIDATES = 10;
/** Messages are kept this long, then deleted. */
export const MESSAGE_KEPT_MS = 24 * 60 * 60 * 1000;

export { findInMessage, linearPattern, type Found, type MessagePatterns } from "./message-reading.js";

/**
 * Whether two domains align (relaxed, without a public-suffix list): equal, or one under the other,
 * never a bare top-level name. A DKIM signature's domain and its mail's From; a domain that
 * signature proved and a platform's declared sender.
 */
export function aligned(one: string, other: string): boolean {
  if (one === other) return one.includes(".");
  const [parent, child] = one.length < other.length ? [one, other] : [other, one];
  return parent.includes(".") && child.endsWith(`.${parent}`);
}
