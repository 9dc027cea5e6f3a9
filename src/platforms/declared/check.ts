import { z } from "zod";
import { ACTION_PARAMS } from "../../domain/actions.js";
import { jsonPath } from "./errors.js";
import { slashed, type Locator, type PlatformFile, type Recipe, type Source, type Step } from "./schema.js";
import { placeholdersOf } from "../steps/templates.js";

type Path = readonly (string | number)[];

/** The params an action type takes in the service's own schema (every member of a union). */
export function ownParams(schema: z.ZodType): Set<string> {
  if (schema instanceof z.ZodUnion) return new Set((schema.options as z.ZodType[]).flatMap((option) => [...ownParams(option)]));
  if (schema instanceof z.ZodObject) return new Set(Object.keys(schema.shape));
  return new Set();
}

/**
 * What the schema cannot say of a valid file: named locators that exist and do not name
 * themselves, placeholders that name the action's params, a goto that stays on the platform, and
 * results that read only what the recipe has. One line per problem, at its JSON path.
 */
export function checkPlatformFile(file: PlatformFile): string[] {
  const problems: string[] = [];
  const report = (path: Path, message: string) => problems.push(`${jsonPath(path)}: ${message}`);
  checkNamedLocators(file.locators, report);
  const locatorsAt = (locator: Locator, path: Path, params?: ReadonlySet<string>) => checkLocator(locator, path, file.locators, report, params);
  locatorsAt(file.signedIn, ["signedIn"]);
  locatorsAt(file.signedOut, ["signedOut"]);
  locatorsAt(file.signedInAs.locator, ["signedInAs", "locator"]);
  for (const key of ["username", "password", "submit", "remember", "refused", "alert"] as const) {
    const locator = file.signIn[key];
    if (locator) locatorsAt(locator, ["signIn", key]);
  }
  file.signIn.challenges.forEach((challenge, index) => {
    for (const key of ["shows", "field", "submit", "refusal", "remember", "message"] as const) {
      const locator = challenge[key];
      if (locator) locatorsAt(locator, ["signIn", "challenges", index, key]);
    }
    if (challenge.link && challenge.field) report(["signIn", "challenges", index, "link"], "a sign-in link challenge has no field (its answer is the link)");
  });
  file.failures.forEach((failure, index) => locatorsAt(failure.shows, ["failures", index, "shows"]));
  for (const [type, recipe] of Object.entries(file.actions) as [keyof typeof file.actions, Recipe][]) {
    checkRecipe(recipe, ["actions", type], ownParams(ACTION_PARAMS[type]), report, locatorsAt);
  }
  return problems;
}

type Report = (path: Path, message: string) => void;
type LocatorsAt = (locator: Locator, path: Path, params?: ReadonlySet<string>) => void;

function checkNamedLocators(named: Readonly<Record<string, Locator>>, report: Report): void {
  for (const name of Object.keys(named)) {
    const seen: string[] = [name];
    const walk = (locator: Locator): boolean => {
      for (const ref of refsOf(locator)) {
        if (seen.includes(ref)) return (report(["locators", name], `names itself through ${[...seen, ref].map((one) => `"${one}"`).join(" → ")}`), false);
        const target = named[ref];
        if (!target) continue; // reported where it is written
        seen.push(ref);
        if (!walk(target)) return false;
        seen.pop();
      }
      return true;
    };
    walk(named[name]!);
  }
}

function refsOf(locator: Locator): string[] {
  if ("anyOf" in locator) return locator.anyOf.flatMap(refsOf);
  return [...("ref" in locator ? [locator.ref] : []), ...(locator.within ? refsOf(locator.within) : [])];
}

/** Every `ref` names a locator; placeholders (allowed only in a recipe's locators) name a param. */
function checkLocator(locator: Locator, path: Path, named: Readonly<Record<string, Locator>>, report: Report, params?: ReadonlySet<string>): void {
  if ("anyOf" in locator) {
    locator.anyOf.forEach((one, index) => checkLocator(one, [...path, "anyOf", index], named, report, params));
    return;
  }
  if ("ref" in locator && !Object.hasOwn(named, locator.ref)) {
    report([...path, "ref"], `no locator is named "${locator.ref}" in "locators"${Object.keys(named).length ? ` (there are: ${Object.keys(named).join(", ")})` : ""}`);
  }
  for (const key of ["name", "label", "text", "placeholder"] as const) {
    const value = (locator as Record<string, unknown>)[key];
    if (typeof value !== "string" || slashed(value)) continue;
    for (const name of placeholdersOf(value)) {
      if (!params) report([...path, key], `{{${name}}}: placeholders are only for a recipe's steps and results`);
      else if (!params.has(name)) report([...path, key], unknownPlaceholder(name, params));
    }
  }
  if (locator.within) checkLocator(locator.within, [...path, "within"], named, report, params);
}

function unknownPlaceholder(name: string, params: ReadonlySet<string>): string {
  return `{{${name}}} is not a param of this action type (its params: ${[...params].join(", ") || "none"})`;
}

function checkRecipe(recipe: Recipe, path: Path, own: ReadonlySet<string>, report: Report, locatorsAt: LocatorsAt): void {
  for (const name of Object.keys(recipe.params ?? {})) {
    if (own.has(name)) report([...path, "params", name], `"${name}" is already a param of this action type: a platform file adds params, it cannot change the service's own`);
  }
  const params = new Set([...own, ...Object.keys(recipe.params ?? {})]);
  const extracted = new Set<string>();
  recipe.steps.forEach((step, index) => {
    const at: Path = [...path, "steps", index];
    checkStep(step, at, params, report, locatorsAt);
    if ("extract_text" in step) extracted.add(step.as);
  });
  for (const [field, source] of Object.entries(recipe.result)) {
    const at: Path = [...path, "result", field];
    if ("each" in source) {
      locatorsAt(source.each, [...at, "each"], params);
      for (const [inner, innerSource] of Object.entries(source.fields)) checkSource(innerSource, [...at, "fields", inner], params, extracted, report, locatorsAt);
    } else checkSource(source, at, params, extracted, report, locatorsAt);
  }
}

function checkStep(step: Step, at: Path, params: ReadonlySet<string>, report: Report, locatorsAt: LocatorsAt): void {
  const placeholders = (value: string, key: string) => {
    for (const name of placeholdersOf(value)) if (!params.has(name)) report([...at, key], unknownPlaceholder(name, params));
  };
  if ("goto" in step) {
    placeholders(step.goto, "goto");
    const whole = /^\{\{\s*[A-Za-z][A-Za-z0-9_]*\s*\}\}$/.test(step.goto);
    if (!whole && (!step.goto.startsWith("/") || step.goto.startsWith("//"))) {
      report([...at, "goto"], `"${step.goto}" leaves the platform: a goto is a path of the platform's own origin ("/…"), or exactly "{{param}}" for a URL param (checked against the origin when it runs)`);
    }
  } else if ("click" in step) locatorsAt(step.click, [...at, "click"], params);
  else if ("fill" in step) {
    locatorsAt(step.fill, [...at, "fill"], params);
    placeholders(step.value, "value");
  } else if ("press" in step) {
    if (step.on) locatorsAt(step.on, [...at, "on"], params);
  } else if ("wait_for" in step) {
    locatorsAt(step.wait_for, [...at, "wait_for"], params);
    step.unless?.forEach((unless, index) => locatorsAt(unless.shows, [...at, "unless", index, "shows"], params));
  } else locatorsAt(step.extract_text, [...at, "extract_text"], params);
}

function checkSource(source: Source, at: Path, params: ReadonlySet<string>, extracted: ReadonlySet<string>, report: Report, locatorsAt: LocatorsAt): void {
  if ("param" in source && !params.has(source.param)) report([...at, "param"], `"${source.param}" is not a param of this action type (its params: ${[...params].join(", ")})`);
  if ("extracted" in source && !extracted.has(source.extracted)) report([...at, "extracted"], `no extract_text step keeps a text "as": "${source.extracted}"`);
  if ("text" in source) locatorsAt(source.text, [...at, "text"], params);
  if ("of" in source) locatorsAt(source.of, [...at, "of"], params);
}
