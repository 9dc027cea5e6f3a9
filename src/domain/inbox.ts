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
/** Messages are kept this long, then deleted. */
export const MESSAGE_KEPT_MS = 24 * 60 * 60 * 1000;

/** What a driver declares of its platform's messages (`Driver.inbox`). */
export interface MessagePatterns {
  code?: RegExp;
  link?: RegExp;
  /** The platform's sending domains: then only mail DKIM-signed by one of them, aligned with its `From`, answers (DESIGN §15). */
  senders?: readonly string[];
}

/** What the inbox found in a message: a code to type, or a sign-in link to open. */
export type Found = { code: string } | { link: string } | undefined;

/** Words that stand beside a code in the messages platforms send. */
const CODE_WORDS = /\b(?:code|codes|verification|verify|pin|passcode|one[- ]time|otp|security|sign[- ]?in|log[- ]?in|confirm(?:ation)?)\b/i;
/** A 4–10 character code: digits, or letters and digits with at least one digit (not a word). */
const CODE = /\b(?=[A-Z0-9-]*\d)[A-Z0-9](?:[A-Z0-9-]{2,10}[A-Z0-9])\b/gi;
/** How far from a code word a code may stand, in characters. */
const NEAR = 80;

/**
 * The code or sign-in link in a message (DESIGN §15): the driver's declared patterns first (a link
 * before a code), else the generic rule — a 4–10 character code beside a word such as code,
 * verification or PIN, the nearest one to such a word. Undefined when nothing is found.
 */
export function findInMessage(text: string, patterns: MessagePatterns | undefined): Found {
  const link = patterns?.link && firstMatch(text, patterns.link);
  if (link) return { link };
  const code = patterns?.code && firstMatch(text, patterns.code);
  if (code) return { code: code.trim() };
  return genericCode(text);
}

function firstMatch(text: string, pattern: RegExp): string | undefined {
  const match = new RegExp(pattern.source, pattern.flags.replace("g", "")).exec(text);
  return match ? (match[1] ?? match[0]) : undefined;
}

/** Links and bracketed addresses (an image's name written out of a mail's HTML): never a code. */
const ADDRESSES = /\[[^\]\s]*\]|\b(?:https?:\/\/|www\.)\S+/gi;

function genericCode(original: string): Found {
  // Blanked rather than removed, so the distance between a code and a word stays what it was.
  const text = original.replace(ADDRESSES, (address) => " ".repeat(address.length));
  let best: { code: string; distance: number } | undefined;
  const words = [...text.matchAll(new RegExp(CODE_WORDS.source, "gi"))].map((match) => match.index);
  if (words.length === 0) return undefined;
  for (const match of text.matchAll(CODE)) {
    const code = match[0].replace(/-/g, "");
    if (code.length < 4 || code.length > 10) continue;
    const distance = Math.min(...words.map((at) => Math.abs(at - match.index)));
    if (distance <= NEAR && (!best || distance < best.distance)) best = { code, distance };
  }
  return best && { code: best.code };
}
