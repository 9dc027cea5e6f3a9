import type { Locator as PwLocator, Page } from "playwright";
import { ActionFailure } from "../../domain/errors.js";
import { kindOf, mayChange, type AnyStep, type Locator, type StepKind, type Target } from "../../domain/steps.js";
import type { DriverContext, FailureDetector } from "../driver.js";
import { pathOf, stepFailure } from "./failure.js";
import { compileLocator, type Root } from "./locators.js";
import { resolveTarget, type StepRecord } from "./record.js";
import { redactor, snapshotOf } from "./snapshot.js";
import { fillTemplate, hasAll, type Params } from "./templates.js";

/** How `runSteps` runs a list of steps. */
export interface RunOptions {
  /** Values for the steps' {{param}} placeholders (a recipe's, a routine's); without them every step is taken as written. */
  params?: Params;
  /** Params whose values are secrets: never in a record, a snapshot or an error (they are typed, never shown). */
  secretParams?: readonly string[];
  /** The driver's failure detectors: a step that cannot be done on one of their pages fails with its code. */
  failures?: readonly FailureDetector[];
  /** A platform file's named locators, for `{"ref": …}`. */
  named?: Readonly<Record<string, Locator>>;
  /** A step naming a param not given is skipped (a recipe's optional params). */
  skipUnfilled?: boolean;
  /** Record each step's element (role, accessible name, how many matched) in `steps`: costs one look at it per step. */
  record?: boolean;
  /** Only reading steps (validated at create): the snapshot of each page reached is kept in `snapshots`. */
  dryRun?: boolean;
  /** What shows when the platform signed the account out, looked for after each step. */
  signedOut?: (page: Page) => PwLocator;
  /**
   * A step that acts (click, fill, press) does so only when its target is one element: a saved
   * routine replayed without an agent must not act on whichever of several came first (a redesign
   * that added a second "Save" fails the step instead of clicking the wrong one).
   */
  unambiguous?: boolean;
}

/** A page's accessibility snapshot a `snapshot` step (or a dry run's page) kept. */
export interface PageSnapshot {
  /** The index of the step after which it was read. */
  step: number;
  path: string;
  snapshot: string;
}

/** What a run of steps gives back. */
export interface StepsResult {
  /** The texts `extract_text` steps kept, by their `as`. */
  extracted: Record<string, string>;
  /** One record per step run (with `record`: its element's role, name and `matched`). */
  steps: StepRecord[];
  /** The snapshots `snapshot` steps (and a dry run) read. */
  snapshots: PageSnapshot[];
}

/**
 * Runs steps in the signed-in page, in order: the commit point before the first that may change
 * something, every step waiting as long as a page may take unless it says otherwise. A step that
 * cannot be done fails `ui_changed` (or a failure detector's code) with its index, the page's path
 * and its accessibility snapshot in the error's details, the values typed and the secrets
 * redacted. One runner for `browser_steps`, a platform file's recipes and routines.
 */
export async function runSteps(context: DriverContext, steps: readonly AnyStep[], options: RunOptions = {}): Promise<StepsResult> {
  const { page } = context;
  const { params } = options;
  const typed: string[] = [];
  const secrets = [
    context.secrets().password,
    context.secrets().totpSecret,
    ...(options.secretParams ?? []).map((name) => (params?.[name] === undefined ? undefined : String(params[name] as string))),
  ];
  const redact = (text: string) => redactor([...secrets, ...typed])(text);
  const result: StepsResult = { extracted: {}, steps: [], snapshots: [] };
  const keepSnapshot = async (index: number) => {
    await page.waitForLoadState("load").catch(() => undefined);
    const snapshot = await snapshotOf(page, redact);
    if (snapshot !== undefined) result.snapshots.push({ step: index, path: pathOf(page), snapshot });
  };
  let committed = false;
  for (const [index, step] of steps.entries()) {
    if (options.skipUnfilled && params && !applies(step, params)) continue;
    if (mayChange(step) && options.dryRun) throw new ActionFailure("invalid_input", `Step ${index + 1} (${kindOf(step)}) may change something; a dry run only reads.`);
    try {
      // An ambiguous target is found out before the commit point: such a step changes nothing, and costs nothing.
      const acting = options.unambiguous ? actingTarget(step) : undefined;
      if (acting !== undefined) await refuseAmbiguous(find(acting, page, options), index);
      if (mayChange(step) && !committed) {
        await context.commit();
        committed = true;
      }
      const record = await runStep(context, step, index, options, typed);
      if (kindOf(step) === "extract_text" && "extract_text" in step) result.extracted[step.as] = record.text ?? "";
      result.steps.push(record.record);
      if ("snapshot" in step || (options.dryRun && "goto" in step)) await keepSnapshot(index);
      if (options.signedOut && LEAVING.includes(kindOf(step)) && (await options.signedOut(page).first().isVisible())) {
        throw new ActionFailure("signed_out", "The platform signed the account out during the steps.");
      }
    } catch (error) {
      const what = `Step ${index + 1} (${kindOf(step)}) could not be done on ${pathOf(page)}.`;
      throw await stepFailure(context, options.failures ?? [], error, what, { step: index }, redact);
    }
  }
  // A dry run shows where it ended too, when that is not the page its last snapshot read.
  if (options.dryRun && result.snapshots.at(-1)?.path !== pathOf(page)) await keepSnapshot(steps.length - 1);
  return result;
}

/**
 * Steps after which the page may be another one: only after these is it looked at for the
 * platform's sign-in form (a fill, a wait or a read leaves the page where it was).
 */
const LEAVING: readonly StepKind[] = ["goto", "click", "press"];

/** Whether a step runs with these params: every placeholder it names was given. */
function applies(step: AnyStep, params: Params): boolean {
  if ("goto" in step) return hasAll(step.goto, params);
  if ("fill" in step) return hasAll(step.value, params);
  return true;
}

/** A target ready to find on a page: a locator compiled (with the file's named ones), or a Playwright selector. */
function find(target: Target, root: Root, options: RunOptions): PwLocator {
  return typeof target === "string" ? root.locator(target) : compileLocator(target, options.named ?? {})(root, options.params);
}

const PLACEHOLDER_ONLY = /^\{\{\s*([A-Za-z][A-Za-z0-9_]*)\s*\}\}$/;

async function runStep(context: DriverContext, step: AnyStep, index: number, options: RunOptions, typed: string[]): Promise<{ record: StepRecord; text?: string }> {
  const { page } = context;
  const { params } = options;
  const action = kindOf(step);
  if ("goto" in step) {
    await context.open(gotoTarget(context, step.goto, params));
    return { record: { index, action, path: pathOf(page) } };
  }
  if ("snapshot" in step) return { record: { index, action } };
  const target = "click" in step ? step.click : "fill" in step ? step.fill : "wait_for" in step ? step.wait_for : "extract_text" in step ? step.extract_text : (step.on ?? ("selector" in step ? step.selector : undefined));
  const record: StepRecord = { index, action, ...(target === undefined ? {} : typeof target === "string" ? { selector: target } : { locator: target }) };
  if (target === undefined) {
    await page.keyboard.press((step as { press: string }).press);
    return { record };
  }
  const found = find(target, page, options);
  // What the step acts on is read before it acts: a click may leave the page.
  const look = async () => {
    if (!options.record) return;
    await found.first().waitFor({ state: "attached" });
    record.matched = await found.count();
    const resolved = await resolveTarget(found);
    if (resolved) record.target = resolved;
  };
  if ("click" in step) {
    await look();
    await found.first().click();
  } else if ("fill" in step) {
    const whole = params ? PLACEHOLDER_ONLY.exec(step.value)?.[1] : undefined;
    const value = params ? fillTemplate(step.value, params) : step.value;
    typed.push(value);
    await look();
    await found.first().fill(value);
    record.value_from = whole ? { param: whole } : { step_value: index };
  } else if ("press" in step) {
    await look();
    await found.first().press(step.press);
  } else if ("wait_for" in step) {
    await waitFor(context, found, step, index, options);
    await look();
  } else if ("extract_text" in step) {
    const text = (await found.first().innerText()).trim();
    await look();
    return { record: { ...record, as: step.as }, text };
  }
  return { record };
}

/** The target of a step that acts on an element (click, fill, press on one); undefined for the others. */
function actingTarget(step: AnyStep): Target | undefined {
  if ("click" in step) return step.click;
  if ("fill" in step) return step.fill;
  if ("press" in step) return step.on ?? ("selector" in step ? step.selector : undefined);
  return undefined;
}

/** Fails the step when its target, once on the page, is more than one element. */
async function refuseAmbiguous(found: PwLocator, index: number): Promise<void> {
  // One look when the target is there already (the usual case); else it is waited for, then counted.
  let matched = await found.count();
  if (matched === 0) {
    await found.first().waitFor({ state: "attached" });
    matched = await found.count();
  }
  if (matched > 1) throw new ActionFailure("ui_changed", `Step ${index + 1}'s target now matches ${matched} elements on the page; a routine acts only on the one it was saved for. Name it more closely (a name, exact, or within) and save a new version.`);
}

/** Waits until the target shows, the driver's failure detectors (and a recipe's `unless` states) checked all along. */
async function waitFor(context: DriverContext, found: PwLocator, step: Extract<AnyStep, { wait_for: unknown }>, index: number, options: RunOptions): Promise<void> {
  const { page } = context;
  const unless = "unless" in step ? (step.unless ?? []) : [];
  const states: Record<string, PwLocator> = { done: found };
  const shown = unless.map((one) => compileLocator(one.shows, options.named ?? {})(page, options.params));
  shown.forEach((locator, index) => (states[`unless${index}`] = locator));
  const state = await context.settle(states, step.timeout_ms === undefined ? undefined : { timeoutMs: step.timeout_ms }).catch((error: unknown) => {
    // Said as the step's own failure: which step, and that what it waits for never showed on this path.
    if (error instanceof ActionFailure && error.code === "ui_changed") throw new ActionFailure("ui_changed", `Step ${index + 1} (wait_for): what it waits for did not show on ${pathOf(page)}.`);
    throw error;
  });
  if (state === "done") return;
  const which = Number(state.slice("unless".length));
  const one = unless[which]!;
  const text = (await shown[which]!.first().innerText()).trim();
  const code = one.codes?.find((candidate) => text.startsWith(candidate.startsWith))?.code ?? one.code;
  throw new ActionFailure(code, one.message ?? `The platform says: ${text}`);
}

/**
 * Where a goto leads: a path of the platform (its {{param}} values URL-encoded), a URL of the
 * platform's own origin, or exactly "{{param}}" for a URL param of that origin. Nothing else opens.
 */
function gotoTarget(context: DriverContext, goto: string, params: Params | undefined): string {
  const whole = params ? PLACEHOLDER_ONLY.exec(goto)?.[1] : undefined;
  const written = whole ? String(params![whole] as string) : params ? fillTemplate(goto, params, true) : goto;
  return written.startsWith("/") && !whole ? written : sameOrigin(context, written);
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
