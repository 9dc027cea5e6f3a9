import { RE2JS } from "re2js";
import { z } from "zod";
import { CHALLENGE_KINDS } from "../../domain/challenges.js";

/**
 * The platform file (`<name>.platform.json`, DESIGN §14): a driver declared as data. This schema is
 * its validator, its TypeScript type and (through `z.toJSONSchema`) the JSON Schema editors read,
 * shipped as `platform.schema.json`. A file names pages by role, label and text, never CSS or XPath,
 * and never holds code: its regular expressions run on RE2 (linear, no look-around).
 */
export const PLATFORM_FILE_VERSION = 1;

/** What a locator position holding a string (a CSS selector, an XPath) is told. */
export const NO_CSS = "CSS selectors are not allowed; use role, label or text";

/** The ARIA roles Playwright's `getByRole` knows. */
export const ARIA_ROLES = [
  "alert", "alertdialog", "application", "article", "banner", "blockquote", "button", "caption", "cell", "checkbox", "code", "columnheader",
  "combobox", "complementary", "contentinfo", "definition", "deletion", "dialog", "directory", "document", "emphasis", "feed", "figure", "form",
  "generic", "grid", "gridcell", "group", "heading", "img", "insertion", "link", "list", "listbox", "listitem", "log", "main", "marquee", "math",
  "meter", "menu", "menubar", "menuitem", "menuitemcheckbox", "menuitemradio", "navigation", "none", "note", "option", "paragraph",
  "presentation", "progressbar", "radio", "radiogroup", "region", "row", "rowgroup", "rowheader", "scrollbar", "search", "searchbox",
  "separator", "slider", "spinbutton", "status", "strong", "subscript", "superscript", "switch", "tab", "table", "tablist", "tabpanel", "term",
  "textbox", "time", "timer", "toolbar", "tooltip", "tree", "treegrid", "treeitem",
] as const;

/** The seed's codes a page can show (the others are the engine's: credits, the browser, a challenge's deadline). */
export const PAGE_ERROR_CODES = ["signed_out", "login_failed", "account_blocked", "rate_limited", "not_found", "unsupported", "invalid_input", "rejected", "ui_changed"] as const;

/** The action types a file may declare recipes for: `connect` needs none, and `browser_steps` is the service's own. */
export const RECIPE_TYPES = ["post", "lookup_person", "lookup_conversation", "send_message"] as const;

/** Whether RE2 can run `source` (no look-around, no back-references); the reason otherwise. */
export function re2Problem(source: string, flags = ""): string | undefined {
  try {
    RE2JS.compile(source, (flags.includes("i") ? RE2JS.CASE_INSENSITIVE : 0) | (flags.includes("m") ? RE2JS.MULTILINE : 0) | (flags.includes("s") ? RE2JS.DOTALL : 0));
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** A `/…/flags` string (a regular expression written where text is expected), split. */
export function slashed(value: string): { source: string; flags: string } | undefined {
  const match = /^\/(.+)\/([ims]*)$/s.exec(value);
  return match ? { source: match[1]!, flags: match[2]! } : undefined;
}

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

/** Text as a person reads it, or `/…/flags` for a regular expression. */
const text = z
  .string()
  .min(1)
  .max(500)
  .superRefine((value, context) => {
    const regex = slashed(value);
    const problem = regex && re2Problem(regex.source, regex.flags);
    if (problem) context.addIssue({ code: "custom", message: `not a regular expression RE2 can run (${problem}): use no look-around and no back-references` });
  })
  .describe('Text as shown on the page; written "/…/" (with flags i, m, s after it) it is a regular expression. May hold {{param}} placeholders in recipes.');

const exact = z.boolean().optional().describe("Match the whole text, case-sensitively (default: a case-insensitive substring).");

const nth = z.int().min(-1).max(100).optional().describe("Which of several it finds: 0 the first (the default), -1 the last. Prefer a `within` that tells it apart.");

/** How a person finds something on the page: by role and name, label, text or placeholder, a named locator, or any of several. */
export type Locator =
  | { role: (typeof ARIA_ROLES)[number]; name?: string; exact?: boolean; level?: number; nth?: number; within?: Locator }
  | { label: string; exact?: boolean; nth?: number; within?: Locator }
  | { text: string; exact?: boolean; nth?: number; within?: Locator }
  | { placeholder: string; exact?: boolean; nth?: number; within?: Locator }
  | { ref: string; within?: Locator }
  | { anyOf: Locator[] };

export const LocatorJson: z.ZodType<Locator> = z
  .union(
    [
      z.strictObject({
        role: z.enum(ARIA_ROLES).describe("The element's ARIA role."),
        name: text.optional().describe("Its accessible name."),
        exact,
        level: z.int().min(1).max(6).optional().describe("A heading's level."),
        nth,
        get within() { return LocatorJson.optional(); },
      }),
      z.strictObject({ label: text.describe("The label of a form field."), exact, nth, get within() { return LocatorJson.optional(); } }),
      z.strictObject({ text: text.describe("Text the element shows."), exact, nth, get within() { return LocatorJson.optional(); } }),
      z.strictObject({ placeholder: text.describe("A field's placeholder."), exact, nth, get within() { return LocatorJson.optional(); } }),
      z.strictObject({ ref: z.string().min(1).describe("The name of a locator in `locators`."), get within() { return LocatorJson.optional(); } }),
      z.strictObject({ get anyOf() { return z.array(LocatorJson).min(1).max(20).describe("Any of these (the first found)."); } }),
    ],
    { error: (issue) => (typeof issue.input === "string" ? NO_CSS : "a locator is one of {role}, {label}, {text}, {placeholder}, {ref} or {anyOf}") },
  )
  .meta({ id: "Locator", description: "Something on the page, found as a person finds it. Add `within` to look only inside another locator." });

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

const template = z.string().max(10_000).describe("Text with {{param}} placeholders, replaced by the action's params as text.");

const StepJson = z
  .union([
    z.strictObject({ goto: z.string().min(1).max(2_000).describe('A path of the platform ("/…", {{param}} values URL-encoded), or exactly "{{param}}" for a URL param of the platform\'s origin.') }),
    z.strictObject({ click: LocatorJson }),
    z.strictObject({ fill: LocatorJson, value: template }),
    z.strictObject({ press: z.string().min(1).max(50).describe("A key, e.g. `Enter`."), on: LocatorJson.optional() }),
    z.strictObject({
      wait_for: LocatorJson.describe("Waits until this shows (the failure detectors are checked all along)."),
      timeout_ms: z.int().min(0).max(60_000).optional(),
      unless: z
        .array(
          z.strictObject({
            shows: LocatorJson.describe("A page state that ends the action instead, e.g. the platform's alert."),
            code: code.describe("Its code, when none of `codes` matches its text."),
            message: z.string().min(1).max(1_000).optional().describe("The error's message; left out, the page's own words."),
            codes: z.array(z.strictObject({ startsWith: z.string().min(1), code })).max(50).optional().describe("Codes by the start of its text."),
          }),
        )
        .max(20)
        .optional(),
    }),
    z.strictObject({ extract_text: LocatorJson, as: z.string().regex(/^[a-z][a-z0-9_]*$/).describe("The name it is kept as, for the result's `extracted`.") }),
  ])
  .meta({ id: "Step" });

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
export type Step = z.output<typeof StepJson>;
export type Source = z.output<typeof SourceJson>;
export type ResultField = z.output<typeof ResultFieldJson>;

/** The JSON Schema of a platform file, as shipped in `platform.schema.json`. */
export function platformJsonSchema(): Record<string, unknown> {
  return { $schema: "https://json-schema.org/draft/2020-12/schema", ...z.toJSONSchema(PlatformFileJson, { io: "input", unrepresentable: "any" }) } as Record<string, unknown>;
}
