import { z } from "zod";
import { CHALLENGE_KINDS } from "../../domain/challenges.js";
import { LocatorJson, PAGE_ERROR_CODES, re2Problem, StepJson } from "../../domain/steps.js";

// The step vocabulary is shared with routines and browser_steps (src/domain/steps.ts); a file's own parts are here.
export { ARIA_ROLES, LocatorJson, NO_CSS, PAGE_ERROR_CODES, re2Problem, slashed, StepJson, type Locator, type Step } from "../../domain/steps.js";

/**
 * The platform file (`<name>.platform.json`, DESIGN §14): a driver declared as data. This schema is
 * its validator, its TypeScript type and (through `z.toJSONSchema`) the JSON Schema editors read,
 * shipped as `platform.schema.json`. A file names pages by role, label and text, never CSS or XPath,
 * and never holds code: its regular expressions run on RE2 (linear, no look-around).
 */
export const PLATFORM_FILE_VERSION = 1;

/** The action types a file may declare recipes for: `connect` needs none, and `browser_steps` is the service's own. */
export const RECIPE_TYPES = ["post", "lookup_person", "lookup_conversation", "send_message"] as const;

/** A regular expression in a field that is always one (e.g. a result's `pattern`); `groups` capture groups at most. */
const pattern = (what: string) =>
  z
    .string()
    .min(1)
    .max(1_000)
    .superRefine((source, context) => {
      const problem = re2Problem(source);
      if (problem) context.addIssue({ code: "custom", message: `not a regular expression RE2 can run (${problem}): use no look-around and no back-references` });
    })
    .describe(`${what} A regular expression (RE2: no look-around, no back-references).`);

const code = z.enum(PAGE_ERROR_CODES).describe("A seed error code.");

/** A page state that ends any action with a code. */
const FailureJson = z.strictObject({
  shows: LocatorJson.describe("What tells this page apart."),
  code,
  message: z.string().min(1).max(1_000).describe("The action's error message: the page's words, and what to do."),
});

const ChallengeJson = z.strictObject({
  kind: z.enum(CHALLENGE_KINDS),
  shows: LocatorJson.describe("What tells this challenge page apart (e.g. its heading)."),
  field: LocatorJson.optional().describe("Where the answer is typed; left out, only the page moves it on (another device, the live browser)."),
  submit: LocatorJson.optional().describe("The button that sends the answer; left out, Enter in the field."),
  link: z.boolean().optional().describe("The platform mailed a sign-in link instead of a code: the answer is that link."),
  refusal: LocatorJson.optional().describe("What says an answer was wrong; left out, the field shown again is the refusal."),
  remember: LocatorJson.optional().describe('A "remember this device" box, ticked before answering.'),
  message: LocatorJson.optional().describe("The page's words for what is asked; left out, the text of `shows`."),
  onForm: z.boolean().optional().describe("Shown on the sign-in form itself, before it is sent (a question after failed sign-ins)."),
});

const SignInJson = z.strictObject({
  path: z.string().regex(/^\//, "a path of the platform, starting with /").optional().describe("Where the form is, when it is not on the signed-out page."),
  username: LocatorJson,
  password: LocatorJson,
  submit: LocatorJson,
  remember: LocatorJson.optional().describe('A "keep me signed in" box.'),
  refused: LocatorJson.describe("What shows after sending when the platform refused the credentials."),
  alert: LocatorJson.optional().describe("The page's words for a refusal; `refused` itself when left out."),
  challenges: z.array(ChallengeJson).max(20).default([]),
});

/** Where a result field's text comes from, with an optional `pattern` whose first group is kept. */
const SourceJson = z
  .union([
    z.strictObject({ from: z.enum(["url"]).describe("The page's address."), pattern: pattern("Keeps the first group (decoded).").optional() }),
    z.strictObject({ param: z.string().min(1).describe("One of the action's params, as given."), pattern: pattern("Keeps the first group.").optional() }),
    z.strictObject({ extracted: z.string().min(1).describe("A text an `extract_text` step kept `as` this name."), pattern: pattern("Keeps the first group.").optional() }),
    z.strictObject({ text: LocatorJson.describe("The text this shows."), optional: z.boolean().optional().describe("Empty when not on the page (else the action fails ui_changed)."), pattern: pattern("Keeps the first group.").optional() }),
    z.strictObject({
      attribute: z.string().regex(/^[a-z][a-z0-9_:-]*$/).describe("An attribute of the element, e.g. href or datetime."),
      of: LocatorJson,
      optional: z.boolean().optional(),
      pattern: pattern("Keeps the first group.").optional(),
    }),
  ])
  .meta({ id: "Source" });

const ResultFieldJson = z.union([
  SourceJson,
  z.strictObject({
    each: LocatorJson.describe("Every element this finds (e.g. the list's items) gives one object."),
    fields: z.record(z.string().regex(/^[a-z][a-z0-9_]*$/), SourceJson).describe("Each field read inside the element (locators are scoped to it)."),
  }),
]);

/** A param a platform adds to an action type's own (e.g. a wiki page's title); always a string. */
const ExtraParamJson = z.strictObject({
  description: z.string().min(1).max(500),
  required: z.boolean().optional(),
  maxLength: z.int().min(1).max(10_000).optional(),
  pattern: pattern("The value must match it.").optional(),
});

const RecipeJson = z.strictObject({
  params: z.record(z.string().regex(/^[a-z][a-z0-9_]*$/), ExtraParamJson).optional().describe("Params this platform adds to the action type's own (never replacing one)."),
  steps: z.array(StepJson).min(1).max(50),
  result: z.record(z.string().regex(/^[a-z][a-z0-9_]*$/), ResultFieldJson).default({}).describe("The action's result, field by field, read once the steps are done."),
});

const PaceJson = z.strictObject({
  per_hour: z.int().min(1).optional(),
  per_day: z.int().min(1).optional(),
  min_gap_seconds: z.int().min(0).optional(),
});

export const PlatformFileJson = z
  .strictObject({
    $schema: z.string().optional(),
    schemaVersion: z.literal(PLATFORM_FILE_VERSION).describe("The platform file format's version."),
    name: z.string().regex(/^[a-z][a-z0-9_-]{0,39}$/, "a platform name is lower-case letters, digits, - and _, starting with a letter (at most 40)"),
    title: z.string().min(1).max(100),
    description: z.string().max(1_000).default(""),
    paces: z.partialRecord(z.enum(["connect", ...RECIPE_TYPES]), PaceJson).optional(),
    inbox: z
      .strictObject({
        code: pattern("The code in the platform's mails and texts (its first group).").optional(),
        link: pattern("The sign-in link in its mails (its first group).").optional(),
        senders: z.array(z.string().min(3)).max(20).optional().describe("The domains it mails from (DKIM-checked)."),
      })
      .optional(),
    blockedHosts: z.array(z.string().min(1)).max(100).optional().describe("Hosts its pages call that the driver never needs."),
    whenUnreachable: z.string().max(500).optional().describe("Added to the message when the platform cannot be reached."),
    locators: z.record(z.string().regex(/^[A-Za-z][A-Za-z0-9_]*$/), LocatorJson).default({}).describe('Named locators, used as {"ref": "name"}.'),
    start: z.string().regex(/^\//, "a path of the platform, starting with /").describe("Where every action starts: a page that shows whether the account is signed in."),
    startTimeoutMs: z.int().min(1_000).max(120_000).optional(),
    signedIn: LocatorJson,
    signedOut: LocatorJson,
    signedInAs: z.strictObject({
      locator: LocatorJson,
      read: z.union([z.literal("text"), z.strictObject({ attribute: z.string().min(1) })]),
      pattern: pattern("The handle is its first group (decoded).").optional(),
    }),
    probe: z
      .strictObject({
        path: z.string().regex(/^\//, "a path of the platform, starting with /"),
        pattern: pattern("Finds the signed-in handle (its first group) in the HTML the path answers with 200."),
      })
      .optional()
      .describe("A health check's look without a page."),
    signIn: SignInJson,
    failures: z.array(FailureJson).max(50).default([]),
    actions: z.partialRecord(z.enum(RECIPE_TYPES), RecipeJson).default({}),
  })
  .meta({ id: "PlatformFile", title: "action-service platform file", description: "A driver declared as data (docs/platform-files.md)." });

export type PlatformFile = z.output<typeof PlatformFileJson>;
export type Recipe = z.output<typeof RecipeJson>;
export type Source = z.output<typeof SourceJson>;
export type ResultField = z.output<typeof ResultFieldJson>;

/** The JSON Schema of a platform file, as shipped in `platform.schema.json`. */
export function platformJsonSchema(): Record<string, unknown> {
  return { $schema: "https://json-schema.org/draft/2020-12/schema", ...z.toJSONSchema(PlatformFileJson, { io: "input", unrepresentable: "any" }) } as Record<string, unknown>;
}
