import type { Page } from "playwright";
import { RE2JS } from "re2js";
import { ActionFailure } from "../../domain/errors.js";
import type { ActionHandler, FailureDetector } from "../driver.js";
import { pathOf, redactor, runSteps, stepFailure, type FindOn, type Params, type Root } from "../steps/index.js";
import type { Locator as LocatorJson, Recipe, Source } from "./schema.js";

/** Compiles a declared locator with the file's named ones. */
export type Compile = (locator: LocatorJson) => FindOn;

/**
 * One action type's handler from its recipe: its steps in order in the signed-in page by the shared
 * runner (a step naming a param the action was not given is skipped; the commit point before the
 * first that may change something), then the result read field by field. A step that cannot be
 * done fails `ui_changed` with its number and the page's snapshot, unless a failure detector's page
 * shows (then its code).
 */
export function recipeHandler(recipe: Recipe, compile: Compile, failures: readonly FailureDetector[], named: Readonly<Record<string, LocatorJson>> = {}): ActionHandler {
  const result = Object.entries(recipe.result).map(([field, source]) => ({ field, read: "each" in source ? compileEach(source.each, source.fields, compile) : compileSource(source, compile) }));
  return async (context) => {
    const { page, params } = context;
    const { extracted } = await runSteps(context, recipe.steps, { params, failures, named, skipUnfilled: true });
    const values: Record<string, unknown> = {};
    for (const { field, read } of result) {
      try {
        values[field] = await read(page, params, extracted, page);
      } catch (error) {
        throw await stepFailure(context, failures, error, `The result's "${field}" could not be read on ${pathOf(page)}.`, { result_field: field }, redactor([context.secrets().password]));
      }
    }
    return values;
  };
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
