import type { Locator, Page } from "playwright";
import { slashed, type Locator as LocatorJson } from "../../domain/steps.js";
import { fillTemplate, type Params } from "./templates.js";

/** Where a locator looks: the page, or inside another locator (`within`, a result's `each`). */
export type Root = Page | Locator;

/** A declared locator, ready to find its element on a page with an action's params. */
export type FindOn = (root: Root, params?: Params) => Locator;

/**
 * Playwright's own locators from a declared one, by role, label, text or placeholder (as a person
 * reads the page): the file's words are never a selector. Named locators are resolved from
 * `named`, which the file's checks have already found free of unknown names and cycles.
 */
export function compileLocator(locator: LocatorJson, named: Readonly<Record<string, LocatorJson>>): FindOn {
  if ("anyOf" in locator) {
    const each = locator.anyOf.map((one) => compileLocator(one, named));
    return (root, params) => each.map((find) => find(root, params)).reduce((any, found) => any.or(found));
  }
  if ("ref" in locator) {
    const target = compileLocator(named[locator.ref]!, named);
    return scoped(locator.within, named, target);
  }
  const exact = locator.exact;
  let find: FindOn;
  if ("role" in locator) {
    const { role, name, level } = locator;
    find = (root, params) =>
      root.getByRole(role, {
        ...(name === undefined ? {} : { name: textOf(name, params) }),
        ...(exact === undefined ? {} : { exact }),
        ...(level === undefined ? {} : { level }),
      });
  } else if ("label" in locator) {
    find = (root, params) => root.getByLabel(textOf(locator.label, params), exact === undefined ? {} : { exact });
  } else if ("text" in locator) {
    find = (root, params) => root.getByText(textOf(locator.text, params), exact === undefined ? {} : { exact });
  } else {
    find = (root, params) => root.getByPlaceholder(textOf(locator.placeholder, params), exact === undefined ? {} : { exact });
  }
  const { nth } = locator;
  const picked: FindOn = nth === undefined ? find : nth === -1 ? (root, params) => find(root, params).last() : (root, params) => find(root, params).nth(nth);
  return scoped(locator.within, named, picked);
}

function scoped(within: LocatorJson | undefined, named: Readonly<Record<string, LocatorJson>>, find: FindOn): FindOn {
  if (!within) return find;
  const outer = compileLocator(within, named);
  return (root, params) => find(outer(root, params).first(), params);
}

const regexes = new Map<string, RegExp>();

/**
 * A name or text: `/…/flags` is a regular expression (handed to the page's own engine, where
 * Playwright matches it; the file's checks made sure RE2 could run it too), anything else is text,
 * its {{param}} placeholders replaced by the params' values.
 */
function textOf(value: string, params: Params | undefined): string | RegExp {
  const regex = slashed(value);
  if (!regex) return params ? fillTemplate(value, params) : value;
  let compiled = regexes.get(value);
  if (!compiled) {
    compiled = new RegExp(regex.source, regex.flags);
    regexes.set(value, compiled);
  }
  return compiled;
}
