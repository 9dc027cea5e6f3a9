import type { Locator as PwLocator } from "playwright";
import type { Locator, StepKind } from "../../domain/steps.js";

/** The element a step acted on, as a person (and a saved routine) names it: its ARIA role and accessible name. */
export interface ResolvedTarget {
  role: string;
  /** Its accessible name; absent when it has none (then a routine needs another locator for it). */
  name?: string;
}

/**
 * What one step of a succeeded run did (the result's `steps`, DESIGN §6): what `save_routine` saves
 * a step from. Never a typed value: a `fill` says where its value came from.
 */
export interface StepRecord {
  /** The step's index in the steps given (from 0). */
  index: number;
  action: StepKind;
  /** The path a `goto` opened (or the page a `snapshot` read). */
  path?: string;
  /** The step's own target when it was a locator (role, label, text or placeholder), as given. */
  locator?: Locator;
  /** The step's own target when it was a Playwright selector (CSS, `role=`, `text=`), as given. */
  selector?: string;
  /** The element acted on, read from the page: its role and accessible name. */
  target?: ResolvedTarget;
  /** How many elements the target matched (the step acted on the first): a routine is saved only from 1. */
  matched?: number;
  /**
   * Where a `fill`'s value came from: the step's own `value` (`{"step_value": index}`, the value
   * itself is in the action's params) or a param (`{"param": name}`, a routine's or a recipe's).
   */
  value_from?: { step_value: number } | { param: string };
  /** An `extract_text`'s name in `extracted`. */
  as?: string;
}

/** The role and accessible name of the first element `found` matches, from its accessibility node. */
export async function resolveTarget(found: PwLocator): Promise<ResolvedTarget | undefined> {
  try {
    const json: unknown = await found.first().ariaSnapshotJSON({ depth: 0, timeout: 5_000 });
    const nodes = (typeof json === "string" ? JSON.parse(json) : json) as unknown;
    const node = (Array.isArray(nodes) ? nodes[0] : nodes) as { role?: unknown; name?: unknown } | undefined;
    if (!node || typeof node.role !== "string") return undefined;
    return { role: node.role, ...(typeof node.name === "string" && node.name !== "" ? { name: node.name } : {}) };
  } catch {
    return undefined;
  }
}
