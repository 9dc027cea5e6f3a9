import { RE2JS } from "re2js";

/** What a driver declares of its platform's messages (`Driver.inbox`). */
export interface MessagePatterns {
  /** The code in the platform's messages: the first capture group, else the whole match. */
  code?: RegExp;
  /** The sign-in link ("magic link") in its mails. */
  link?: RegExp;
  /**
   * The domains the platform mails from. When declared, only mail whose DKIM signature verifies
   * and aligns with one of them may answer (DESIGN §15); other mail is kept and listed, never typed.
   */
  senders?: readonly string[];
}

/** What the inbox found in a message: a code to type, or a sign-in link to open. */
export type Found = { code: string } | { link: string } | undefined;

// Anyone who knows an inbox's address may send it a message, so reading one must take time linear
// in its length whatever it holds: a backtracking engine can take seconds on text built for it (and
// the event loop with it). The generic rule's patterns are written so that every repetition is
// bounded or ends its match (each start position costs a few steps at most); a driver's patterns,
// which could be written any way, run on RE2 (re2js), linear by construction.

/** Words that stand beside a code in the messages platforms send. */
const CODE_WORDS = /\b(?:codes?|verification|verify|pin|passcode|one[- ]time|otp|security|sign[- ]?in|log[- ]?in|confirm(?:ation)?)\b/gi;
/** A 4–10 character code candidate: letters, digits and hyphens between two letters or digits (at most 12 characters from its start). */
const CODE = /\b[A-Za-z0-9][A-Za-z0-9-]{2,10}[A-Za-z0-9]\b/g;
/**
 * Links and bracketed addresses (an image's name written out of a mail's HTML): never a code. A
 * bracket's inside holds no `[`, so a run of brackets costs one step each, not a scan to the end.
 */
const ADDRESSES = /\[[^[\]\s]*\]|\b(?:https?:\/\/|www\.)\S+/gi;
/** How far from a code word a code may stand, in characters. */
const NEAR = 80;

const compiled = new WeakMap<RegExp, RE2JS>();

/**
 * A driver's pattern on the linear-time engine. Throws for a pattern RE2 cannot run in linear time
 * (look-around, back-references): a driver must declare patterns it can.
 */
export function linearPattern(pattern: RegExp): RE2JS {
  let linear = compiled.get(pattern);
  if (!linear) {
    const flags = (pattern.ignoreCase ? RE2JS.CASE_INSENSITIVE : 0) | (pattern.multiline ? RE2JS.MULTILINE : 0) | (pattern.dotAll ? RE2JS.DOTALL : 0);
    try {
      linear = RE2JS.compile(pattern.source, flags);
    } catch (error) {
      throw new Error(`The message pattern /${pattern.source}/ cannot run in linear time (${(error as Error).message}): use no look-around and no back-references.`);
    }
    compiled.set(pattern, linear);
  }
  return linear;
}

/**
 * The code or sign-in link in a message (DESIGN §15): the driver's declared patterns first (a link
 * before a code), else the generic rule — a 4–10 character code beside a word such as code,
 * verification or PIN, the nearest one to such a word. Undefined when nothing is found. Its time
 * is linear in the text's length.
 */
export function findInMessage(text: string, patterns: MessagePatterns | undefined): Found {
  const link = patterns?.link && firstMatch(text, patterns.link);
  if (link) return { link };
  const code = patterns?.code && firstMatch(text, patterns.code);
  if (code) return { code: code.trim() };
  return genericCode(text);
}

function firstMatch(text: string, pattern: RegExp): string | undefined {
  const linear = linearPattern(pattern);
  const matcher = linear.matcher(text);
  if (!matcher.find()) return undefined;
  return (linear.groupCount() > 0 ? matcher.group(1) : null) ?? matcher.group() ?? undefined;
}

/** Each match's start and text, in order. */
function* matches(pattern: RegExp, text: string): Generator<{ at: number; text: string }> {
  for (const match of text.matchAll(pattern)) yield { at: match.index, text: match[0] };
}

function genericCode(original: string): Found {
  // Blanked rather than removed, so the distance between a code and a word stays what it was.
  let text = "";
  let from = 0;
  for (const address of matches(ADDRESSES, original)) {
    text += original.slice(from, address.at) + " ".repeat(address.text.length);
    from = address.at + address.text.length;
  }
  text += original.slice(from);
  const words = [...matches(CODE_WORDS, text)].map((word) => word.at);
  if (words.length === 0) return undefined;
  let best: { code: string; distance: number } | undefined;
  // Codes and words both come in order of position: the nearest word to each code is found by
  // walking the words once.
  let next = 0;
  for (const candidate of matches(CODE, text)) {
    if (!/\d/.test(candidate.text)) continue;
    const code = candidate.text.replace(/-/g, "");
    if (code.length < 4 || code.length > 10) continue;
    while (next < words.length && words[next]! < candidate.at) next += 1;
    const distance = Math.min(next > 0 ? candidate.at - words[next - 1]! : Infinity, next < words.length ? words[next]! - candidate.at : Infinity);
    if (distance <= NEAR && (!best || distance < best.distance)) best = { code, distance };
  }
  return best && { code: best.code };
}
