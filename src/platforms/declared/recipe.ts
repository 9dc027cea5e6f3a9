import type { Locator, Page } from "playwright";
import { RE2JS } from "re2js";
import { ActionFailure } from "../../domain/errors.js";
import type { ActionHandler, DriverContext, FailureDetector } from "../driver.js";
import type { FindOn, Root } from "./locators.js";
import type { Locator as LocatorJson, Recipe, Source, Step } from "./schema.js";
import { fillTemplate, hasAll, type Params } from "./templates.js";

/** Compiles a declared locator with the file's named ones. */
export type Compile = (locator: LocatorJson) => FindOn;

/** Steps that may change something on the platform (as `browser_steps` judges them): the commit point comes before the first. */
const CHANGES = (step: Step) => "click" in step || "fill" in step || "press" in step;

/**
 * One action type's handler from its recipe: its steps in order in the signed-in page (a step
 * naming a param the action was not given is skipped), the commit point before the first that may
 * change something, then the result read field by field. A step that cannot be done fails
 * `ui_changed` with its number, unless a failure detector's page shows (then its code).
 */
export function recipeHandler(recipe: Recipe, compile: Compile, failures: readonly FailureDetector[]): ActionHandler {
  const steps = recipe.steps.map((step) => ({ step, run: compileStep(step, compile) }));
  const result = Object.entries(recipe.result).map(([field, source]) => ({ field, read: "each" in source ? compileEach(source.each, source.fields, compile) : compileSource(source, compile) }));
  return async (context) => {
    const { page, params } = context;
    const extracted: Record<string, string> = {};
    let committed = false;
    for (const [index, { step, run }] of steps.entries()) {
      if (!applies(step, params)) continue;
      if (!committed && CHANGES(step)) {
        await context.commit();
        committed = true;
      }
      try {
        await run(context, extracted);
      } catch (error) {
        throw await stepFailure(context, failures, error, `Step ${index + 1} (${Object.keys(step)[0]}) could not be done on ${pathOf(page)}.`);
      }
    }
    const values: Record<string, unknown> = {};
    for (const { field, read } of result) {
      try {
        values[field] = await read(page, params, extracted, page);
      } catch (error) {
        throw await stepFailure(context, failures, error, `The result's "${field}" could not be read on ${pathOf(page)}.`);
      }
    }
    return values;
  };
}

/** Whether a step runs with these params: every placeholder it names was given. */
function applies(step: Step, params: Params): boolean {
  if ("goto" in step) return hasAll(step.goto, params);
  if ("fill" in step) return hasAll(step.value, params);
  return true;
}

function pathOf(page: Page): string {
  try {
    return new URL(page.url()).pathname;
  } catch {
    return page.url();
  }
}

/**
 * What a step's error means: a failure of the platform (a detector's page, the page still arriving)
 * or of the browser stays what it is; anything else is a page that does not look as the file says.
 */
async function stepFailure(context: DriverContext, failures: readonly FailureDetector[], error: unknown, what: string): Promise<unknown> {
  const { page } = context;
  if (page.isClosed()) return error;
  if (error instanceof ActionFailure && error.code !== "ui_changed") return error;
  const judged = context.judgeTimeout(error);
  if (judged && judged.code !== "ui_changed") return judged;
  if (!(error instanceof ActionFailure) && !judged && !isPageError(error)) return error;
  for (const failure of failures) {
    if (await failure.locate(page).first().isVisible().catch(() => false)) return new ActionFailure(failure.code, failure.message);
  }
  return new ActionFailure("ui_changed", what);
}

/** An error Playwright raises for the page (not the browser): an element not found, not fillable, not visible. */
function isPageError(error: unknown): boolean {
  return error instanceof Error && !/Target (page, context or browser )?(has been )?closed|Browser has been closed/i.test(error.message);
}

type RunStep = (context: DriverContext, extracted: Record<string, string>) => Promise<void>;

function compileStep(step: Step, compile: Compile): RunStep {
  if ("goto" in step) {
    const whole = /^\{\{\s*([A-Za-z][A-Za-z0-9_]*)\s*\}\}$/.exec(step.goto)?.[1];
    return async (context) => {
      if (whole) return context.open(sameOrigin(context, String(context.params[whole] as string)));
      await context.open(fillTemplate(step.goto, context.params, true));
    };
  }
  if ("click" in step) {
    const find = compile(step.click);
    return async ({ page, params }) => find(page, params).first().click();
  }
  if ("fill" in step) {
    const find = compile(step.fill);
    return async ({ page, params }) => find(page, params).first().fill(fillTemplate(step.value, params));
  }
  if ("press" in step) {
    const find = step.on && compile(step.on);
    return async ({ page, params }) => (find ? find(page, params).first().press(step.press) : page.keyboard.press(step.press));
  }
  if ("wait_for" in step) {
    const done = compile(step.wait_for);
    const unless = (step.unless ?? []).map((one) => ({ ...one, find: compile(one.shows) }));
    return async (context) => {
      const { page, params } = context;
      const states: Record<string, Locator> = { done: done(page, params) };
      unless.forEach((one, index) => (states[`unless${index}`] = one.find(page, params)));
      const state = await context.settle(states, step.timeout_ms === undefined ? undefined : { timeoutMs: step.timeout_ms });
      if (state === "done") return;
      const shown = unless[Number(state.slice("unless".length))]!;
      const text = (await shown.find(page, params).first().innerText()).trim();
      const code = shown.codes?.find((candidate) => text.startsWith(candidate.startsWith))?.code ?? shown.code;
      throw new ActionFailure(code, shown.message ?? `The platform says: ${text}`);
    };
  }
  const find = compile(step.extract_text);
  return async ({ page, params }, extracted) => {
    extracted[step.as] = (await find(page, params).first().innerText()).trim();
  };
}

/** Only a URL of the platform's own origin is opened. */
function sameOrigin(context: DriverContext, url: string): string {
  const origin = new URL(context.baseUrl).origin;
  let given: URL;
  try {
    given = new URL(url);
  } catch {
    throw new ActionFailure("invalid_input", `"${url}" is not a URL of this platform (${origin}).`);
  }
  if (given.origin !== origin) throw new ActionFailure("invalid_input", `Only pages of this platform (${origin}) can be opened; got ${given.origin}.`);
  return given.href;
}

type Read = (root: Root, params: Params, extracted: Readonly<Record<string, string>>, page: Page) => Promise<unknown>;

function compileEach(each: LocatorJson, fields: Readonly<Record<string, Source>>, compile: Compile): Read {
  const find = compile(each);
  const reads = Object.entries(fields).map(([field, source]) => ({ field, read: compileSource(source, compile) }));
  return async (root, params, extracted, page) => {
    const items = [];
    for (const item of await find(root, params).all()) {
      const value: Record<string, unknown> = {};
      for (const { field, read } of reads) value[field] = await read(item, params, extracted, page);
      items.push(value);
    }
    return items;
  };
}

function compileSource(source: Source, compile: Compile): Read {
  const keep = source.pattern === undefined ? (text: string) => text : firstGroup(source.pattern);
  const optional = "optional" in source && source.optional === true;
  const found = (text: string | null | undefined, what: string): string => {
    if (text === null || text === undefined) {
      if (optional) return "";
      throw new ActionFailure("ui_changed", `${what} is not on the page.`);
    }
    const kept = keep(text);
    if (kept === undefined) {
      if (optional) return "";
      throw new ActionFailure("ui_changed", `${what} ("${text.slice(0, 100)}") does not match its pattern.`);
    }
    return kept;
  };
  if ("from" in source) {
    // A group of the address (an id in its path or query) is read decoded, as the page shows it.
    return async (_root, _params, _extracted, page) => {
      const kept = found(page.url(), "The page's address");
      return source.pattern === undefined ? kept : decoded(kept);
    };
  }
  if ("param" in source) return async (_root, params) => found(params[source.param] === undefined ? "" : String(params[source.param] as string), `The param "${source.param}"`);
  if ("extracted" in source) return async (_root, _params, extracted) => found(extracted[source.extracted] ?? "", `The text kept as "${source.extracted}"`);
  if ("text" in source) {
    const find = compile(source.text);
    return async (root, params) => {
      const element = find(root, params).first();
      return found((await element.count()) > 0 ? (await element.innerText()).trim() : undefined, "The text read");
    };
  }
  const find = compile(source.of);
  return async (root, params) => {
    const element = find(root, params).first();
    return found((await element.count()) > 0 ? await element.getAttribute(source.attribute) : undefined, `The attribute "${source.attribute}" read`);
  };
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** A pattern on RE2 (linear in the text, never the page's engine): its first group, or the whole match. */
export function firstGroup(pattern: string): (text: string) => string | undefined {
  const compiled = RE2JS.compile(pattern);
  return (text) => {
    const matcher = compiled.matcher(text);
    if (!matcher.find()) return undefined;
    return (compiled.groupCount() > 0 ? matcher.group(1) : matcher.group()) ?? undefined;
  };
}
