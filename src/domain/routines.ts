import { z } from "zod";
import { NO_CSS, StepJson, type Locator, type Step } from "./steps.js";

export { ARIA_ROLES, type Locator } from "./steps.js";

/**
 * Routines (DESIGN §14): a named, parameterised, versioned recipe of browser steps for one platform
 * in one workspace, taught by an agent and replayed by the service. Its steps are the platform
 * files' vocabulary (locators by role, label, text or placeholder; never CSS or XPath), its params a
 * JSON Schema whose properties may be marked secret with `"writeOnly": true`.
 */

/** Why a saved step may not name its target with a selector. */
export const ROUTINE_NO_CSS =
  "a routine replays without an agent watching, so its steps name their targets as a person reads the page: by role and accessible name ({role, name}), label ({label}) or text ({text}). " +
  "CSS and XPath selectors are refused: they break silently on a redesign, or hit another control";

export const RoutineName = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,63}$/, "a routine name is lower-case letters, digits and _, starting with a letter (at most 64)")
  .describe("The routine's name, unique in the workspace, e.g. `update_bio`.");

const PARAM_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** The params a text's {{param}} placeholders name (as the step runner fills them). */
function placeholdersOf(text: string): string[] {
  return [...text.matchAll(/\{\{\s*([A-Za-z][A-Za-z0-9_]*)\s*\}\}/g)].map((match) => match[1]!);
}

/** One param of a routine: a text, number or boolean, as a placeholder writes it. */
const ParamPropertyJson = z
  .strictObject({
    type: z.enum(["string", "number", "integer", "boolean"]),
    description: z.string().max(500).optional(),
    enum: z.array(z.union([z.string(), z.number(), z.boolean()])).min(1).max(100).optional(),
    pattern: z.string().max(1_000).optional(),
    minLength: z.int().min(0).max(10_000).optional(),
    maxLength: z.int().min(1).max(10_000).optional(),
    minimum: z.number().optional(),
    maximum: z.number().optional(),
    writeOnly: z.boolean().optional().describe("A secret (a password, a code): sealed at rest, never stored in the routine, never shown in the action, its events or logs."),
  })
  .superRefine((property, context) => {
    if (property.pattern !== undefined) {
      try {
        new RegExp(property.pattern, "u");
      } catch {
        context.addIssue({ code: "custom", path: ["pattern"], message: "not a regular expression" });
      }
    }
  });

/** A routine's params: a JSON Schema object whose properties are texts, numbers or booleans; nothing else is accepted. */
export const RoutineParamsSchemaJson = z
  .strictObject({
    type: z.literal("object"),
    properties: z.record(z.string().regex(PARAM_NAME, "a param name is lower-case letters, digits and _, starting with a letter"), ParamPropertyJson).default({}),
    required: z.array(z.string()).max(100).optional(),
    additionalProperties: z.literal(false).optional(),
  })
  .superRefine((schema, context) => {
    for (const name of schema.required ?? []) {
      if (!Object.hasOwn(schema.properties, name)) context.addIssue({ code: "custom", path: ["required"], message: `"${name}" is required but not a property` });
    }
  })
  .default({ type: "object", properties: {} })
  .describe('JSON Schema of the routine\'s params: {"type": "object", "properties": {"bio": {"type": "string"}}, "required": ["bio"]}. Mark a secret with "writeOnly": true.');

export type RoutineParamsSchema = z.output<typeof RoutineParamsSchemaJson>;
export type RoutineStep = Step;

const LOCATOR_KEYS = new Set(["click", "fill", "wait_for", "extract_text", "on", "within", "shows"]);
const SELECTOR_KEYS = new Set(["css", "xpath", "selector"]);

/** Finds selectors where a locator goes, anywhere in a step, so the refusal says why (not only that the shape is wrong). */
function selectorPaths(value: unknown, path: (string | number)[], found: (string | number)[][]): void {
  if (Array.isArray(value)) return value.forEach((item, index) => selectorPaths(item, [...path, index], found));
  if (typeof value !== "object" || value === null) return;
  for (const [key, inner] of Object.entries(value)) {
    if (SELECTOR_KEYS.has(key)) found.push([...path, key]);
    else if (LOCATOR_KEYS.has(key) && typeof inner === "string") found.push([...path, key]);
    else if (key === "anyOf" && Array.isArray(inner)) inner.forEach((one, index) => (typeof one === "string" ? found.push([...path, key, index]) : selectorPaths(one, [...path, key, index], found)));
    else selectorPaths(inner, [...path, key], found);
  }
}

const RoutineStepJson = z.preprocess((step, context) => {
  const found: (string | number)[][] = [];
  selectorPaths(step, [], found);
  for (const path of found) context.addIssue({ code: "custom", path, message: ROUTINE_NO_CSS, input: step });
  return step;
}, StepJson);

const steps = z.array(RoutineStepJson).min(1).max(50).describe("The steps, in the browser_steps vocabulary: goto a path of the platform, click, fill, press, wait_for, extract_text; {{param}} placeholders.");
const description = z.string().max(1_000).describe("What the routine does, for the agent choosing it.");

/** Request shapes for routines: validators, types, MCP input schemas and OpenAPI in one. */
export const CreateRoutineInput = z.strictObject({
  platform: z.string().min(1).max(50).describe("The platform it runs on, e.g. `sandbox`."),
  name: RoutineName,
  description: description.default(""),
  params: RoutineParamsSchemaJson,
  steps,
});
export const UpdateRoutineInput = z.strictObject({
  description: description.optional().describe("What the routine does; left out, the latest version's."),
  params: RoutineParamsSchemaJson,
  steps,
});
export type CreateRoutine = z.output<typeof CreateRoutineInput>;
export type UpdateRoutine = z.output<typeof UpdateRoutineInput>;

/** One saved version: immutable once written. */
export interface RoutineVersion {
  version: number;
  platform: string;
  description: string;
  params: RoutineParamsSchema;
  steps: RoutineStep[];
  from_action_id: string | undefined;
  created_at: string;
}

/** The params a routine's action takes (DESIGN §3). */
export const RoutineActionParams = z
  .strictObject({
    routine: RoutineName.describe("The routine's name (list_routines, GET /v1/routines)."),
    params: z.record(z.string(), z.unknown()).default({}).describe("Its params, shaped by the routine's own params schema."),
    version: z.int().min(1).optional().describe("A version to run; left out, the latest (the action records the one it ran)."),
  })
  .describe("Run a routine saved for the account's platform (GET /v1/routines); its result is {extracted, version}.");

/** The names of a routine's secret params. */
export function secretParams(schema: RoutineParamsSchema): string[] {
  return Object.entries(schema.properties)
    .filter(([, property]) => property.writeOnly === true)
    .map(([name]) => name);
}

export { REDACTED } from "./secret-params.js";

/** The validator of a routine's params, from its JSON Schema: no param it does not name. */
export function routineParamsValidator(schema: RoutineParamsSchema): z.ZodType<Record<string, unknown>> {
  return z.fromJSONSchema({ ...schema, additionalProperties: false }) as z.ZodType<Record<string, unknown>>;
}

/** The names its `extract_text` steps keep: the routine's result. */
export function extractionsOf(routineSteps: readonly RoutineStep[]): string[] {
  return routineSteps.flatMap((step) => ("extract_text" in step ? [step.as] : []));
}

/** One problem with a routine's steps, at a JSON path. */
export interface RoutineProblem {
  path: string;
  message: string;
}

/**
 * What a routine's steps may not do, beyond their shape: name a param its schema lacks, put a secret
 * anywhere but a field's value, open a page off the platform, or name a locator it does not carry.
 */
export function routineProblems(schema: RoutineParamsSchema, routineSteps: readonly RoutineStep[]): RoutineProblem[] {
  const problems: RoutineProblem[] = [];
  const secrets = new Set(secretParams(schema));
  const placeholders = (text: string, path: string, secretsAllowed: boolean): void => {
    for (const name of placeholdersOf(text)) {
      if (!Object.hasOwn(schema.properties, name)) problems.push({ path, message: `{{${name}}} is not a param of the routine's params schema; add it to "properties" or write the text itself` });
      else if (secrets.has(name) && !secretsAllowed) problems.push({ path, message: `{{${name}}} is a secret param: a secret may only be typed into a field (a fill step's value), never put in an address or a locator` });
    }
  };
  const locator = (found: Locator, path: string): void => {
    if ("anyOf" in found) return found.anyOf.forEach((one, index) => locator(one, `${path}.anyOf.${index}`));
    if ("ref" in found) return void problems.push({ path, message: "a routine has no named locators: write the locator itself" });
    const words = "role" in found ? found.name : "label" in found ? found.label : "text" in found ? found.text : found.placeholder;
    if (words !== undefined) placeholders(words, path, false);
    if (found.within) locator(found.within, `${path}.within`);
  };
  routineSteps.forEach((step, index) => {
    const path = `steps.${index}`;
    if ("goto" in step) {
      placeholders(step.goto, `${path}.goto`, false);
      if (!/^\{\{\s*[a-z][a-z0-9_]*\s*\}\}$/.test(step.goto) && !step.goto.startsWith("/")) {
        problems.push({ path: `${path}.goto`, message: "a routine opens only pages of its platform: write a path starting with / (or exactly {{param}} for a URL param, checked against the platform's address when it runs)" });
      }
    } else if ("click" in step) locator(step.click, `${path}.click`);
    else if ("fill" in step) {
      locator(step.fill, `${path}.fill`);
      placeholders(step.value, `${path}.value`, true);
    } else if ("press" in step) {
      if (step.on) locator(step.on, `${path}.on`);
    } else if ("wait_for" in step) {
      locator(step.wait_for, `${path}.wait_for`);
      (step.unless ?? []).forEach((one, at) => locator(one.shows, `${path}.unless.${at}.shows`));
    } else locator(step.extract_text, `${path}.extract_text`);
  });
  return problems;
}

/** A schema issue's message for a person saving a routine: a selector where a locator goes is told why. */
export function routineIssueMessage(message: string): string {
  return message === NO_CSS ? ROUTINE_NO_CSS : message;
}

/** What a run of a routine action needs: its version's steps and its params, secrets unsealed. */
export interface RoutineRun {
  name: string;
  version: number;
  steps: RoutineStep[];
  params: Record<string, unknown>;
  /** The secret values, for the step runner to keep out of what it reports. */
  secretValues: string[];
  /** The names its extract_text steps keep. */
  extracts: string[];
}

const timestamp = z.iso.datetime();

const VersionJson = z.object({
  version: z.int().describe("Its number: 1, 2, …"),
  description: z.string(),
  params: z.record(z.string(), z.unknown()).meta({ additionalProperties: true }).describe("JSON Schema of its params (secrets marked writeOnly)."),
  steps: z.array(z.record(z.string(), z.unknown()).meta({ additionalProperties: true })).describe("Its steps."),
  extracts: z.array(z.string()).describe("The names its result's `extracted` holds."),
  from_action_id: z.string().optional().describe("The browser_steps action it was saved from."),
  created_at: timestamp,
});

/** A routine as clients read it: its latest version, and its versions listed when one routine is read. */
export const RoutineJson = VersionJson.extend({
  object: z.literal("routine"),
  name: z.string(),
  platform: z.string(),
  updated_at: timestamp.describe("When its latest version was saved."),
  versions: z
    .array(z.object({ version: z.int(), description: z.string(), from_action_id: z.string().optional(), created_at: timestamp }))
    .optional()
    .describe("Every version, newest first (GET /v1/routines/{name}); actions record the one they ran."),
}).meta({ id: "Routine" });
export type PublicRoutine = z.infer<typeof RoutineJson>;
