import { z } from "zod";
import { AppError } from "../../domain/errors.js";
import type { Principal } from "../../domain/keys.js";
import { ARIA_ROLES, RoutineName, type Locator, type RoutineParamsSchema, type RoutineStep } from "../../domain/routines.js";
import { requirePermission, visibleAction } from "../access/index.js";
import type { EngineCore } from "../core.js";
import { refuseLimited, saveVersion, type Routine } from "./routines.js";

const ParamFromValue = z.union([
  z.string().min(1).max(10_000),
  z.strictObject({
    value: z.string().min(1).max(10_000).describe("The value as it was typed (or opened) in the action's steps."),
    description: z.string().max(500).optional(),
    secret: z.boolean().optional().describe("A secret (a password, a code): never stored; the routine asks for it at each run."),
  }),
  z.strictObject({
    step: z.int().min(0).max(49).describe("The index (from 0) of a fill step whose whole value becomes the param: how a fill marked secret, whose value was never kept, is named."),
    description: z.string().max(500).optional(),
    secret: z.boolean().optional().describe("A secret; a fill marked secret always makes one."),
  }),
]);

/** `save_routine`'s request (DESIGN §6): the steps of a succeeded browser_steps action, with values named as params. */
export const SaveRoutineInput = z.strictObject({
  platform: z.string().min(1).max(50).describe("The platform it runs on: the action's own."),
  name: RoutineName,
  from_action_id: z.string().min(1).max(200).describe("A succeeded browser_steps action (`act_…`) whose steps become the routine's."),
  params: z
    .record(z.string().regex(/^[a-z][a-z0-9_]{0,63}$/), ParamFromValue)
    .default({})
    .describe(
      'Which values typed in those steps become params, by name: {"bio": "Hello there"} (every place the value appears becomes {{bio}}), or a fill step\'s whole value by its index: {"password": {"step": 3, "secret": true}} — the way to name a fill marked secret.',
    ),
  description: z.string().max(1_000).optional().describe("What the routine does, for the agent choosing it."),
});
export type SaveRoutine = z.output<typeof SaveRoutineInput>;

/** What a succeeded browser_steps action records of one step (piece B's `StepRecord`, the fields read here). */
interface StepRecord {
  index: number;
  path?: string;
  target?: { role: string; name?: string };
  matched?: number;
}

const LOCATOR_KEYS = ["click", "fill", "wait_for", "extract_text"] as const;

function refuse(message: string, index?: number): AppError {
  return new AppError("invalid_request", message, { issues: [{ path: index === undefined ? "from_action_id" : `from_action_id.steps.${index}`, message }] });
}

/** A path of the platform from a step's address (the run checked it was the platform's). */
function pathOf(address: string): string {
  if (address.startsWith("/")) return address;
  const url = new URL(address);
  return `${url.pathname}${url.search}${url.hash}`;
}

/**
 * A saved locator from what a step named: a locator as given, else the element the run recorded
 * (its role and accessible name), else a Playwright `role=` or `text=` selector read as one.
 */
function locatorOf(given: unknown, record: StepRecord | undefined, index: number): Locator {
  if (typeof given === "object" && given !== null) return given as Locator;
  const selector = String(given);
  if (record?.target?.name !== undefined && (ARIA_ROLES as readonly string[]).includes(record.target.role)) {
    return { role: record.target.role as Locator extends { role: infer R } ? R : never, name: record.target.name, exact: true } as Locator;
  }
  const role = /^role=([a-z]+)(?:\[name=(["'])(.*)\2( i| s)?\])?$/.exec(selector);
  if (role && (ARIA_ROLES as readonly string[]).includes(role[1]!)) {
    return { role: role[1], ...(role[3] === undefined ? {} : { name: role[3] }), ...(role[4] === " s" ? { exact: true } : {}) } as Locator;
  }
  const text = /^text=(?:"(.*)"|(.*))$/.exec(selector);
  if (text) return text[1] !== undefined ? { text: text[1], exact: true } : { text: text[2]! };
  throw refuse(
    `Step ${index + 1} named its target with the selector "${selector.slice(0, 100)}" and no role and accessible name was recorded for it: a routine replays without an agent, so it names targets by role and name, label or text. Run the steps again with such a locator, then save.`,
    index,
  );
}

/** Every place `value` shows in `text`, written {{name}} (in a path, its URL-encoded form too). */
function parameterised(text: string, values: readonly { name: string; value: string }[], inPath: boolean, used: Set<string>): string {
  let out = text;
  for (const { name, value } of values) {
    for (const form of inPath ? [value, encodeURIComponent(value)] : [value]) {
      if (form !== "" && out.includes(form)) {
        out = out.split(form).join(`{{${name}}}`);
        used.add(name);
      }
    }
  }
  return out;
}

function parameterisedLocator(locator: Locator, values: readonly { name: string; value: string }[], used: Set<string>): Locator {
  if ("anyOf" in locator) return { anyOf: locator.anyOf.map((one) => parameterisedLocator(one, values, used)) };
  const copy = { ...locator } as Record<string, unknown>;
  for (const key of ["name", "label", "text", "placeholder"]) {
    if (typeof copy[key] === "string") copy[key] = parameterised(copy[key], values, false, used);
  }
  if (copy.within) copy.within = parameterisedLocator(copy.within as Locator, values, used);
  return copy as Locator;
}

/**
 * `save_routine` (DESIGN §6, §14): the steps of a succeeded browser_steps action as a routine's,
 * each target as the run resolved it, the values named in `params` replaced by placeholders (a
 * secret's value is never stored), then saved as any routine is (a new version when the name exists).
 */
export async function saveRoutineFromAction(core: EngineCore, principal: Principal, input: SaveRoutine): Promise<Routine> {
  // Role and allow-list first, as saveVersion checks them: a refused key learns nothing of the action.
  requirePermission(principal, "act");
  refuseLimited(principal);
  const action = await visibleAction(core.store, principal, input.from_action_id);
  if (action.type !== "browser_steps" || action.status !== "succeeded") {
    throw refuse(`Action ${action.id} is a ${action.status} ${action.type} action; a routine is saved from a succeeded browser_steps action.`);
  }
  if (action.platform !== input.platform) throw refuse(`Action ${action.id} ran on ${action.platform}, not ${input.platform}.`);
  const given = (action.params as { steps: Record<string, unknown>[] }).steps;
  const records = ((action.result as { steps?: StepRecord[] } | undefined)?.steps ?? []) as StepRecord[];
  const values = Object.entries(input.params).flatMap(([name, param]) => (typeof param === "string" ? [{ name, value: param }] : "value" in param ? [{ name, value: param.value }] : []));
  // Params naming a fill step's whole value, by its index; a fill marked secret is named only so.
  const byStep = new Map(Object.entries(input.params).flatMap(([name, param]) => (typeof param === "object" && "step" in param ? [[param.step, name] as const] : [])));
  const secretSteps = new Set<string>();
  for (const [index, name] of byStep) {
    if (!(given[index] && "fill" in given[index])) throw refuse(`The param ${name} names step ${index}, which is not a fill step of action ${action.id}; name a fill step by its index (from 0).`);
  }
  const used = new Set<string>();
  const steps: RoutineStep[] = [];
  given.forEach((step, index) => {
    const record = records.find((one) => one.index === index);
    if (record?.matched !== undefined && record.matched > 1) {
      throw refuse(`Step ${index + 1}'s target matched ${record.matched} elements when it ran; a routine's step must name one. Narrow it (a name, exact, or within) and run the steps again.`, index);
    }
    if ("snapshot" in step) return;
    // The address the step asked for (as a path of the platform), not where a redirect took it.
    if ("goto" in step) return void steps.push({ goto: parameterised(pathOf(String(step.goto)), values, true, used) });
    if ("press" in step) {
      const on = step.on ?? step.selector;
      return void steps.push({ press: String(step.press), ...(on === undefined ? {} : { on: parameterisedLocator(locatorOf(on, record, index), values, used) }) });
    }
    const key = LOCATOR_KEYS.find((candidate) => candidate in step);
    if (!key) throw refuse(`Step ${index + 1} is not one a routine can replay.`, index);
    const locator = parameterisedLocator(locatorOf(step[key], record, index), values, used);
    if (key === "fill") {
      const named = byStep.get(index);
      if (named !== undefined) {
        used.add(named);
        if (step.secret === true) secretSteps.add(named);
        return void steps.push({ fill: locator, value: `{{${named}}}` });
      }
      if (step.secret === true) {
        throw refuse(`Step ${index + 1} typed a secret (secret: true), whose value was never kept: name it as a secret param, e.g. {"password": {"step": ${index}, "secret": true}}.`, index);
      }
      steps.push({ fill: locator, value: parameterised(String(step.value), values, false, used) });
    }
    else if (key === "click") steps.push({ click: locator });
    else if (key === "wait_for") steps.push({ wait_for: locator, ...(typeof step.timeout_ms === "number" ? { timeout_ms: step.timeout_ms } : {}) });
    else steps.push({ extract_text: locator, as: String(step.as) });
  });
  const unused = values.filter(({ name }) => !used.has(name)).map(({ name }) => name);
  if (unused.length > 0) throw refuse(`The value given for ${unused.join(", ")} was not typed or opened in any step of action ${action.id}; give a value exactly as the steps had it.`);
  const params: RoutineParamsSchema = {
    type: "object",
    properties: Object.fromEntries(
      Object.entries(input.params).map(([name, param]) => [
        name,
        {
          type: "string" as const,
          ...(typeof param === "object" && param.description ? { description: param.description } : {}),
          ...((typeof param === "object" && param.secret) || secretSteps.has(name) ? { writeOnly: true } : {}),
        },
      ]),
    ),
    required: Object.keys(input.params),
  };
  const existing = await core.store.routines.get(principal.workspaceId, input.name);
  const latest = existing && existing.deleted_at === undefined ? await core.store.routines.version(principal.workspaceId, input.name, existing.latest) : undefined;
  return saveVersion(
    core,
    principal,
    { platform: input.platform, name: input.name, description: input.description ?? latest?.description ?? "", params, steps, from_action_id: action.id },
    "save",
  );
}
