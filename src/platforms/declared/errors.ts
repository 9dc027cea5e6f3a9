import type { z } from "zod";
import { NO_CSS, RECIPE_TYPES } from "./schema.js";

/** A platform file that cannot be loaded: names the file, where in it, and what is wrong. */
export class PlatformFileError extends Error {
  constructor(
    readonly source: string,
    readonly problems: readonly string[],
  ) {
    super(problems.map((problem) => `${source}: ${problem}`).join("\n"));
    this.name = "PlatformFileError";
  }
}

type Path = readonly PropertyKey[];

/** `actions.post.steps[2].click`, as a person finds it in the file. */
export function jsonPath(path: Path): string {
  const written = path.map((key, index) => (typeof key === "number" ? `[${key}]` : index === 0 ? String(key) : `.${String(key)}`)).join("");
  return written === "" ? "(the file)" : written;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function valueAt(input: unknown, path: Path): unknown {
  let value = input;
  for (const key of path) value = value !== null && typeof value === "object" ? (value as Record<PropertyKey, unknown>)[key] : undefined;
  return value;
}

/** Keys that say someone wrote a selector where the file wants a locator. */
const SELECTOR_KEYS = new Set(["css", "xpath", "selector", "testId", "data-testid"]);

/** One line per problem in zod's issues, each at the JSON path of its value. */
export function describeIssues(issues: readonly z.core.$ZodIssue[], input: unknown): string[] {
  return [...new Set(issues.flatMap((issue) => describe(issue, [], input)))];
}

function describe(issue: z.core.$ZodIssue, base: Path, input: unknown): string[] {
  const path = [...base, ...issue.path];
  const at = jsonPath(path);
  const value = valueAt(input, path);
  switch (issue.code) {
    case "invalid_union": {
      if (value === undefined) return [`${at}: missing (required)`];
      if (typeof value === "string" && issue.message === NO_CSS) return [`${at}: ${NO_CSS}`];
      if (isObject(value) && Object.keys(value).some((key) => SELECTOR_KEYS.has(key))) return [`${at}: ${NO_CSS}`];
      const branch = likeliestBranch(issue.errors, path, input);
      return branch ? branch.flatMap((inner) => describe(inner, path, input)) : [`${at}: ${issue.message}`];
    }
    case "unrecognized_keys": {
      if (issue.keys.some((key) => SELECTOR_KEYS.has(key))) return [`${at}: ${NO_CSS}`];
      if (at === "actions") {
        return issue.keys.map((key) => `actions.${key}: not an action type a platform file can declare a recipe for (${RECIPE_TYPES.join(", ")}; connect needs none)`);
      }
      return [`${at}: unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((key) => `"${key}"`).join(", ")}`];
    }
    case "invalid_type":
      if (value === undefined) return [`${at}: missing (required)`];
      return [`${at}: ${issue.message.replace(/^Invalid input: /, "")}`];
    case "invalid_value":
      return [`${at}: ${JSON.stringify(value)} is not one of ${issue.values.map((one) => JSON.stringify(one)).join(", ")}`];
    case "invalid_key":
      return [`${at}: ${issue.message} (${String(issue.path.at(-1) ?? "")})`];
    default:
      return [`${at}: ${issue.message.replace(/^Invalid input: /, "")}`];
  }
}

/**
 * Of a union's branches, the one the writer meant: the one with the fewest problems about the
 * object's own keys (an unknown key, a missing one). None when the value is not even of the
 * union's shape (every branch wants another type).
 */
function likeliestBranch(branches: readonly (readonly z.core.$ZodIssue[])[], path: Path, input: unknown): readonly z.core.$ZodIssue[] | undefined {
  const scored = branches.map((issues) => ({ issues, score: keyProblems(issues, path, input) })).filter(({ score }) => Number.isFinite(score));
  scored.sort((one, other) => one.score - other.score || one.issues.length - other.issues.length);
  return scored[0]?.issues;
}

function keyProblems(issues: readonly z.core.$ZodIssue[], path: Path, input: unknown): number {
  let score = 0;
  for (const issue of issues) {
    if (issue.path.length === 0 && issue.code === "invalid_type") return Infinity;
    if (issue.path.length === 0 && issue.code === "unrecognized_keys") score += issue.keys.length;
    else if (issue.path.length === 1 && valueAt(input, [...path, ...issue.path]) === undefined) score += 1;
  }
  return score;
}
