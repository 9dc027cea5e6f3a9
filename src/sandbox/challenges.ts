import { randomBytes, randomInt } from "node:crypto";
import { Secret, TOTP } from "otpauth";
import type { User } from "./state.js";

export const TOTP_PERIOD_SECONDS = 30;
export const CODE_LIFETIME_MS = 10 * 60 * 1000;
export const MAX_CODE_ATTEMPTS = 5;

/** True when the string is a usable base32 TOTP secret. */
export function isBase32Secret(secret: string): boolean {
  const compact = secret.replace(/\s+/g, "").toUpperCase();
  if (!/^[A-Z2-7]{16,}=*$/.test(compact)) return false;
  try {
    return Secret.fromBase32(compact).bytes.length >= 10;
  } catch {
    return false;
  }
}

export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

/**
 * Checks an RFC 6238 code (SHA1, 6 digits, 30 s) against the user's secret. A code of the
 * previous or next step is accepted; a step already used (or older) is refused, so a code
 * cannot be replayed. On success the step is recorded.
 */
export function verifyTotp(user: User, code: string, now: Date): boolean {
  if (!user.totpSecret || !/^\d{6}$/.test(code)) return false;
  const totp = new TOTP({
    secret: Secret.fromBase32(user.totpSecret.replace(/\s+/g, "").toUpperCase()),
    algorithm: "SHA1",
    digits: 6,
    period: TOTP_PERIOD_SECONDS,
  });
  const delta = totp.validate({ token: code, timestamp: now.getTime(), window: 1 });
  if (delta === null) return false;
  const step = totp.counter({ timestamp: now.getTime() }) + delta;
  if (user.lastTotpStep !== undefined && step <= user.lastTotpStep) return false;
  user.lastTotpStep = step;
  return true;
}

/** A random 6-digit code for e-mail and text-message challenges. */
export function newCode(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, "0");
}

/** What people type as a code: digits, maybe with spaces or a dash. */
export function normalizeCode(input: string): string {
  return input.replace(/[\s-]/g, "");
}

/** A security answer as people type it: surrounding spaces and letter case do not matter. */
export function securityAnswerMatches(user: User, input: string): boolean {
  const normalize = (text: string) => text.trim().toLowerCase();
  const expected = user.security?.answer;
  return expected !== undefined && normalize(input) !== "" && normalize(input) === normalize(expected);
}

/** "carol@sandbox.example" → "c***@sandbox.example" */
export function maskEmail(email: string): string {
  const at = email.indexOf("@");
  if (at <= 0) return "***";
  return `${email[0]}***${email.slice(at)}`;
}

export function phoneEnding(phone: string): string {
  return phone.replace(/\D/g, "").slice(-2);
}

/** One tile of the captcha grid. */
export interface CaptchaTile { id: string; word: string; symbol: string }
/** A picture puzzle: the tiles showing `word` must all be selected, and no others. */
export interface Captcha { word: string; tiles: CaptchaTile[]; answer: ReadonlySet<string> }

const PICTURES: ReadonlyArray<{ word: string; symbol: string }> = [
  { word: "star", symbol: "★" },
  { word: "heart", symbol: "♥" },
  { word: "sun", symbol: "☀" },
  { word: "cloud", symbol: "☁" },
  { word: "plane", symbol: "✈" },
  { word: "coffee", symbol: "☕" },
  { word: "phone", symbol: "☎" },
  { word: "letter", symbol: "✉" },
  { word: "flag", symbol: "⚑" },
  { word: "snowflake", symbol: "❄" },
];

function pick<T>(items: readonly T[]): T {
  return items[randomInt(0, items.length)] as T;
}

/**
 * A new 3×3 puzzle. Tile ids are random per puzzle, so the answer cannot be submitted without
 * seeing (and, in a browser, clicking) this page's tiles.
 */
export function newCaptcha(): Captcha {
  const target = pick(PICTURES);
  const others = PICTURES.filter((picture) => picture.word !== target.word);
  const targetCount = randomInt(2, 5);
  const pictures = [
    ...Array.from({ length: targetCount }, () => target),
    ...Array.from({ length: 9 - targetCount }, () => pick(others)),
  ];
  for (let i = pictures.length - 1; i > 0; i--) {
    const j = randomInt(0, i + 1);
    [pictures[i], pictures[j]] = [pictures[j] as (typeof pictures)[number], pictures[i] as (typeof pictures)[number]];
  }
  const tiles = pictures.map((picture) => ({ id: randomBytes(8).toString("hex"), ...picture }));
  const answer = new Set(tiles.filter((tile) => tile.word === target.word).map((tile) => tile.id));
  return { word: target.word, tiles, answer };
}

/** `selected` is the comma-separated tile ids the page's script collected from clicks. */
export function captchaSolved(captcha: Captcha, selected: string): boolean {
  const ids = new Set(selected.split(",").map((id) => id.trim()).filter((id) => id.length > 0));
  if (ids.size !== captcha.answer.size) return false;
  for (const id of ids) if (!captcha.answer.has(id)) return false;
  return true;
}
