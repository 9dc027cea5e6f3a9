import { z } from "zod";
import { ACTION_TYPES } from "../domain/actions.js";
import { ACTION_ERROR_CODES } from "../domain/errors.js";
import { linearPattern } from "../domain/inbox.js";
import { PaceJson } from "../domain/pace.js";
import { apiVersionProblem } from "./api-version.js";
import type { Driver } from "./driver.js";

/** A platform's name: what accounts, `ACTION_SERVICE_PLATFORMS` and the API call it. */
export const PLATFORM_NAME = /^[a-z][a-z0-9_-]{0,39}$/;

/** A driver that cannot be loaded or run: the message names the driver and what is wrong with it. */
export class DriverError extends Error {
  override name = "DriverError";
}

const required = (what: string) => ({ error: (issue: { input: unknown }) => (issue.input === undefined ? "is missing" : `must be ${what}`) });
const fn = z.custom<(...args: never[]) => unknown>((value) => typeof value === "function", { error: (issue) => (issue.input === undefined ? "is missing" : "must be a function") });
const text = z.string(required("a string")).trim().min(1, "must not be empty");

/** An inbox pattern: a RegExp the linear-time engine runs, whose one capture group (or whole match) is the code or link. */
const pattern = z
  .custom<RegExp>((value) => value instanceof RegExp, "must be a regular expression, e.g. /code is (\\d{6})/")
  .superRefine((value, context) => {
    try {
      linearPattern(value);
    } catch (error) {
      context.addIssue({ code: "custom", message: (error as Error).message });
      return;
    }
    const groups = new RegExp(`${value.source}|`).exec("")!.length - 1;
    if (groups > 1) context.addIssue({ code: "custom", message: `/${value.source}/ has ${groups} capture groups: give it one (the code or the link) or none (the whole match)` });
  });

const zodSchema = z.custom<z.ZodType>((value) => typeof (value as z.ZodType | undefined)?.safeParse === "function" && "_zod" in (value as object), "must be a zod schema (use the `z` that action-service/driver exports)");

/** What every driver must declare, built-in or brought (the functions' bodies are its own). */
const DriverShape = z.object({
  platform: z.object(
    {
      name: z.string(required("a string")).regex(PLATFORM_NAME, 'must be lower-case letters, digits, "-" or "_", starting with a letter, at most 40 (e.g. "intranet")'),
      title: text,
      description: z.string(required("a string")),
      actions: z.array(z.string()),
      params: z.record(z.string(), zodSchema).optional(),
      inbox: z.strictObject({ code: pattern.optional(), link: pattern.optional(), senders: z.array(text).optional() }).optional(),
      paces: z.record(z.string(), z.strictObject(PaceJson.shape)).optional(),
    },
    required("an object"),
  ),
  failures: z.array(
    z.object({
      code: z.enum(ACTION_ERROR_CODES, { error: (issue) => `${JSON.stringify(issue.input)} is not an action error code (${ACTION_ERROR_CODES.join(", ")})` }),
      locate: fn,
      message: text,
    }),
    required("an array"),
  ),
  ensureSignedIn: fn,
  actions: z.record(z.string(), fn, required("an object of handlers by action type")),
  probe: z.object({ path: text, signedInAs: fn, headers: fn.optional() }).optional(),
  manualSignIn: z.object({ path: text, signedIn: fn }, required("an object")),
  signedInAs: fn,
  blockedHosts: z.array(text).optional(),
  whenUnreachable: text.optional(),
});

/** `failures[0].code` for zod's ["failures", 0, "code"]. */
function pathOf(path: readonly PropertyKey[]): string {
  return path.reduce<string>((joined, key) => (typeof key === "number" ? `${joined}[${key}]` : joined ? `${joined}.${String(key)}` : String(key)), "");
}

/** Its action types: ones the service has, and declarations for types it does not offer (looked at whatever its shape). */
function typeProblems(driver: { actions?: unknown; platform?: { actions?: unknown; params?: unknown; paces?: unknown } }): string[] {
  const problems: string[] = [];
  if (typeof driver.actions !== "object" || driver.actions === null || typeof driver.platform !== "object" || driver.platform === null) return problems;
  const offered = Object.keys(driver.actions);
  if (offered.length === 0) problems.push("actions: declares no action type; it needs at least one handler (connect, post, …)");
  for (const type of offered) {
    if (!(ACTION_TYPES as readonly string[]).includes(type)) problems.push(`actions.${type}: "${type}" is not an action type of the service (${ACTION_TYPES.join(", ")})`);
  }
  const listed = Array.isArray(driver.platform.actions) ? driver.platform.actions.map(String) : [];
  if ([...listed].sort().join(",") !== [...offered].sort().join(",")) problems.push(`platform.actions: lists ${listed.join(", ") || "nothing"} but the handlers are ${offered.join(", ") || "none"} (defineDriver fills it in)`);
  for (const [field, declared] of [["params", driver.platform.params], ["paces", driver.platform.paces]] as const) {
    for (const type of typeof declared === "object" && declared !== null ? Object.keys(declared) : []) {
      if (!offered.includes(type)) problems.push(`platform.${field}.${type}: the driver has no "${type}" handler`);
    }
  }
  return problems;
}

/**
 * The one check every driver passes before the service runs it, built-in or loaded: the API version
 * it was written for, then what it declares. Throws a DriverError naming `where` and every problem.
 */
export function validateDriver(candidate: unknown, where: string): Driver {
  if (typeof candidate !== "object" || candidate === null) {
    throw new DriverError(`driver ${where} exports no driver: export one as default (or as \`driver\`), made with defineDriver from action-service/driver`);
  }
  const versionProblem = apiVersionProblem((candidate as { apiVersion?: unknown }).apiVersion);
  if (versionProblem) throw new DriverError(`driver ${where} ${versionProblem}`);
  const parsed = DriverShape.safeParse(candidate);
  const problems = [...(parsed.success ? [] : parsed.error.issues.map((issue) => `${pathOf(issue.path) || "(the driver)"}: ${issue.message}`)), ...typeProblems(candidate)];
  if (problems.length > 0) throw new DriverError(`driver ${where} declares something invalid:\n  ${problems.join("\n  ")}`);
  return candidate as Driver;
}

/** Refuses two drivers of one platform name; `drivers` are [where, driver] in load order. */
export function refuseRepeatedNames(drivers: readonly (readonly [string, Driver])[]): void {
  const seen = new Map<string, string>();
  for (const [where, driver] of drivers) {
    const first = seen.get(driver.platform.name);
    if (first !== undefined) throw new DriverError(`driver ${where} declares platform "${driver.platform.name}", which driver ${first} already declares: give it another name`);
    seen.set(driver.platform.name, where);
  }
}
