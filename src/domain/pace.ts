import { z } from "zod";
import { ACTION_TYPES, type ActionType } from "./actions.js";

/**
 * Pacing (DESIGN §16): how often an account may start actions of one type. `per_hour` and
 * `per_day` count the actions started in any rolling hour or day; `min_gap_seconds` is the least
 * time between two starts.
 */
export const PaceJson = z
  .object({
    per_hour: z.int().min(1).optional().describe("At most this many started in any rolling hour."),
    per_day: z.int().min(1).optional().describe("At most this many started in any rolling day (24 h)."),
    min_gap_seconds: z.int().min(0).optional().describe("At least this many seconds between two starts."),
  })
  .meta({ id: "Pace" });
export type Pace = z.infer<typeof PaceJson>;

/** An account's pace per action type (only the types that have one). */
export type Paces = Partial<Record<ActionType, Pace>>;

export const PACE_FIELDS = ["per_hour", "per_day", "min_gap_seconds"] as const;

const count = (max: number) => z.int().min(1).max(max);

/** One type's overrides in `PATCH /v1/accounts/{id}`: a number replaces the default, `null` restores it. */
const PaceOverride = z.strictObject({
  per_hour: count(100_000).nullable().optional().describe("At most this many started in any rolling hour; null restores the platform's default."),
  per_day: count(1_000_000).nullable().optional().describe("At most this many started in any rolling day; null restores the platform's default."),
  min_gap_seconds: z.int().min(0).max(86_400).nullable().optional().describe("At least this many seconds between two starts; null restores the platform's default."),
});

export const PaceOverrides = z
  .partialRecord(z.enum(ACTION_TYPES as [ActionType, ...ActionType[]]), PaceOverride)
  .describe('Overrides of the platform\'s default paces, by action type and field, e.g. `{"post": {"per_hour": 2, "per_day": null}}`: a number replaces the default, null restores it.');
export type PaceOverridesInput = z.infer<typeof PaceOverrides>;

/** The overrides an account keeps: after `changes`, a number set, a null removed. Types left with none are dropped. */
export function mergeOverrides(stored: Paces, changes: PaceOverridesInput): Paces {
  const merged: Paces = { ...stored };
  for (const [type, fields] of Object.entries(changes) as [ActionType, z.infer<typeof PaceOverride>][]) {
    const pace: Pace = { ...merged[type] };
    for (const field of PACE_FIELDS) {
      const value = fields[field];
      if (value === null) delete pace[field];
      else if (value !== undefined) pace[field] = value;
    }
    if (Object.keys(pace).length > 0) merged[type] = pace;
    else delete merged[type];
  }
  return merged;
}

/** The pace an account runs at: the driver's defaults, each field replaced by the account's override. */
export function effectivePaces(defaults: Paces | undefined, overrides: Paces | undefined): Paces {
  const effective: Paces = {};
  for (const type of new Set([...Object.keys(defaults ?? {}), ...Object.keys(overrides ?? {})]) as Set<ActionType>) {
    const pace = { ...defaults?.[type], ...overrides?.[type] };
    if (Object.keys(pace).length > 0) effective[type] = pace;
  }
  return effective;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** Gaps get up to this much random jitter, added (DESIGN §16): a paced account does not act like a metronome. */
export const PACE_JITTER = 0.2;

/**
 * When an action may start under `pace`, given the starts of its account's actions of that type
 * within the last day (any order): undefined when it may start now. `random` (0 ≤ r < 1) adds up
 * to 20 % of the wait.
 */
export function paceWait(pace: Pace | undefined, starts: readonly Date[], now: Date, random: () => number): Date | undefined {
  if (!pace) return undefined;
  const sorted = starts.map((start) => start.getTime()).sort((a, b) => a - b);
  const earliest = Math.max(
    windowFree(sorted, pace.per_hour, HOUR_MS, now.getTime()),
    windowFree(sorted, pace.per_day, DAY_MS, now.getTime()),
    pace.min_gap_seconds !== undefined && sorted.length > 0 ? sorted[sorted.length - 1]! + pace.min_gap_seconds * 1000 : 0,
  );
  const wait = earliest - now.getTime();
  if (wait <= 0) return undefined;
  return new Date(earliest + Math.round(wait * PACE_JITTER * random()));
}

/** When fewer than `max` starts fall in the rolling window ending then (0 when already so). */
function windowFree(sorted: readonly number[], max: number | undefined, windowMs: number, now: number): number {
  if (max === undefined) return 0;
  const inWindow = sorted.filter((start) => start > now - windowMs);
  if (inWindow.length < max) return 0;
  return inWindow[inWindow.length - max]! + windowMs;
}

/** A `rate_limited` failure's cool-down when the platform named no wait: 15 minutes, doubling per strike, at most 24 h. */
export function cooldownMs(strikes: number): number {
  return Math.min(15 * 60_000 * 2 ** Math.max(0, strikes - 1), DAY_MS);
}

const NOUNS: Record<ActionType, [string, string]> = {
  connect: ["sign-in", "sign-ins"],
  post: ["post", "posts"],
  lookup_person: ["person lookup", "person lookups"],
  lookup_conversation: ["conversation lookup", "conversation lookups"],
  send_message: ["message", "messages"],
  browser_steps: ["browser-steps run", "browser-steps runs"],
  routine: ["routine run", "routine runs"],
};

/** A pace in words: "2 posts an hour, 1 every 5 s". */
export function describePace(type: ActionType, pace: Pace): string {
  const [one, many] = NOUNS[type];
  const parts: string[] = [];
  if (pace.per_hour !== undefined) parts.push(`${pace.per_hour} ${pace.per_hour === 1 ? one : many} an hour`);
  if (pace.per_day !== undefined) parts.push(`${pace.per_day} ${pace.per_day === 1 ? one : many} a day`);
  if (pace.min_gap_seconds !== undefined && pace.min_gap_seconds > 0) parts.push(`${pace.min_gap_seconds} s between ${many}`);
  return parts.length > 0 ? parts.join(", ") : "no limit";
}

/** A time as the reader's clock shows it in next steps: "14:31 UTC" (with the date when not `now`'s day). */
export function utcTime(at: Date, now: Date): string {
  const time = at.toISOString().slice(11, 16);
  return at.toISOString().slice(0, 10) === now.toISOString().slice(0, 10) ? `${time} UTC` : `${at.toISOString().slice(0, 10)} ${time} UTC`;
}
