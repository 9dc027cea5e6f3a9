import type { AnyStep, Locator } from "../domain/steps.js";

/*
 * A routine's steps as a person reads them (`click button "Save"`, `fill textbox "Bio" with
 * {{bio}}`), for the web app's routine page: the kind of step, then its target as the page shows it.
 */

const ORDINALS = ["1st", "2nd", "3rd"];

function quoted(text: string): string {
  return `"${text}"`;
}

/** Which of several a locator takes, when it says. */
function nthWords(nth: number | undefined): string {
  if (nth === undefined || nth === 0) return "";
  if (nth === -1) return " (the last)";
  return ` (the ${ORDINALS[nth] ?? `${nth + 1}th`})`;
}

/** A locator as a person reads it: `button "Save"`, `field labelled "Bio"`, `text "Saved"`. */
export function locatorWords(locator: Locator): string {
  if ("anyOf" in locator) return locator.anyOf.map(locatorWords).join(" or ");
  const within = locator.within ? ` in ${locatorWords(locator.within)}` : "";
  if ("ref" in locator) return `the locator ${locator.ref}${within}`;
  const nth = nthWords(locator.nth);
  if ("role" in locator) {
    const level = locator.level === undefined ? "" : ` level ${locator.level}`;
    return `${locator.role}${level}${locator.name === undefined ? "" : ` ${quoted(locator.name)}`}${nth}${within}`;
  }
  if ("label" in locator) return `field labelled ${quoted(locator.label)}${nth}${within}`;
  if ("text" in locator) return `text ${quoted(locator.text)}${nth}${within}`;
  return `field with placeholder ${quoted(locator.placeholder)}${nth}${within}`;
}

/** A target of a step: a locator, or (in browser_steps only) a selector shown as written. */
function targetWords(target: Locator | string): string {
  return typeof target === "string" ? `selector ${target}` : locatorWords(target);
}

/** One step as a line a person reads. */
export function stepWords(step: AnyStep): string {
  if ("goto" in step) return `open ${step.goto}`;
  if ("click" in step) return `click ${targetWords(step.click)}`;
  if ("fill" in step) return `fill ${targetWords(step.fill)} with ${step.value}`;
  if ("press" in step) return `press ${step.press}${step.on ? ` on ${targetWords(step.on)}` : ""}`;
  if ("wait_for" in step) return `wait for ${targetWords(step.wait_for)}`;
  if ("extract_text" in step) return `read ${targetWords(step.extract_text)} as ${step.as}`;
  return "take a snapshot of the page";
}
