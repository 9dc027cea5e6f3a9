import { RE2JS } from "re2js";
import { z } from "zod";

/*
 * The step vocabulary (DESIGN §14): how a platform file's recipes, a routine and `browser_steps`
 * name what is on a page (by role, label, text or placeholder, as a person reads it) and what to do
 * there. One vocabulary, one runner (src/platforms/steps/).
 */

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

/** A seed code a page state ends an action with. */
const code = z.enum(PAGE_ERROR_CODES).describe("A seed error code.");

/** A template: text with {{param}} placeholders, replaced by the action's params as text. */
const template = z.string().max(10_000).describe("Text with {{param}} placeholders, replaced by the action's params as text.");

/** A step of a recipe or a routine: locators only, never a selector. */
export const StepJson = z
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

/** A step of a recipe or a routine, as validated. */
export type Step = z.output<typeof StepJson>;

/** What a `browser_steps` step names: a declared locator, or (kept for older clients) a Playwright selector. */
export type Target = string | Locator;

/** Whether a locator names a platform file's locator (`ref`), which a step outside a file has none of. */
function usesRef(locator: Locator): boolean {
  if ("ref" in locator) return true;
  if ("anyOf" in locator) return locator.anyOf.some(usesRef);
  return locator.within !== undefined && usesRef(locator.within);
}

const selector = z
  .string()
  .min(1)
  .max(1_000)
  .describe('A Playwright selector, e.g. `role=button[name="Post"]` or `text=Sign in` (CSS works too, but a routine cannot be saved from it: prefer a locator).');

const TargetJson = z
  .union([selector, LocatorJson])
  .refine((target) => typeof target === "string" || !usesRef(target), "a ref names a platform file's locator; name the element by role, label, text or placeholder")
  .describe("What the step acts on: a locator ({role, name}, {label}, {text} or {placeholder}) or a Playwright selector.");

/** A step of `browser_steps`: the recipe's vocabulary, a selector where a locator goes, and `snapshot`. */
export const BrowserStepJson = z.union([
  z.strictObject({
    goto: z
      .string()
      .min(1)
      .max(2_000)
      .refine((goto) => goto.startsWith("/") || URL.canParse(goto), "a path of the platform (starting with /) or a URL of its address")
      .describe("Open a path of the platform (`/settings`) or a URL of its address."),
  }),
  z.strictObject({ click: TargetJson }),
  z.strictObject({
    fill: TargetJson,
    value: z.string().max(10_000),
    secret: z
      .literal(true)
      .optional()
      .describe('The value is a secret (a password, a code): sealed for the run, shown as "[secret]" wherever the action is read, never kept; save_routine makes it a secret param.'),
  }),
  z.strictObject({ press: z.string().min(1).max(50).describe("A key, e.g. `Enter`."), on: TargetJson.optional(), selector: selector.optional().describe("Kept for older clients: `on`.") }),
  z.strictObject({ wait_for: TargetJson, timeout_ms: z.int().min(0).max(30_000).optional() }),
  z.strictObject({ extract_text: TargetJson, as: z.string().min(1).max(100).describe("Key of the text in `extracted`.") }),
  z.strictObject({ snapshot: z.literal(true).describe("Returns the page's accessibility snapshot (its roles, names and text) in the result's `snapshots`.") }),
]);

export type BrowserStep = z.output<typeof BrowserStepJson>;

/** Any step the runner takes: a recipe's or a routine's (`Step`), or one of `browser_steps`. */
export type AnyStep = Step | BrowserStep;

/** The kinds of step, by their first key. */
export type StepKind = "goto" | "click" | "fill" | "press" | "wait_for" | "extract_text" | "snapshot";

export function kindOf(step: AnyStep): StepKind {
  if ("goto" in step) return "goto";
  if ("click" in step) return "click";
  if ("fill" in step) return "fill";
  if ("press" in step) return "press";
  if ("wait_for" in step) return "wait_for";
  if ("extract_text" in step) return "extract_text";
  return "snapshot";
}

/** Steps that only read: all a dry run may take. */
export const READING_STEPS: readonly StepKind[] = ["goto", "wait_for", "extract_text", "snapshot"];

/** Whether a step may change something on the platform: the commit point comes before the first. */
export function mayChange(step: AnyStep): boolean {
  return !READING_STEPS.includes(kindOf(step));
}
