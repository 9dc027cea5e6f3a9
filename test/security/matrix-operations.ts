import type { Route } from "../../src/api/route.js";
import { ROUTES } from "../../src/api/routes/index.js";
import type { Tool } from "../../src/mcp/tool.js";
import { TOOLS } from "../../src/mcp/tools/index.js";
import { NO_TARGET, TARGETS, type OperationSpec, type PrincipalSpec, type TargetSpec } from "./access-rule.js";
import { exampleOf, jsonSchemaOf } from "./schema-values.js";
import { UNREACHABLE_HOOK, type TargetIds } from "./world.js";

/** A REST route or an MCP tool as the matrix drives it: what it names by id is read from its schemas. */
export type Operation = OperationSpec &
  ({ surface: "rest"; route: Route } | { surface: "mcp"; tool: Tool }) & {
    /** The id may be left out (a list filter): the operation is also run without a target. */
    targetOptional: boolean;
  };

export function restName(route: Route): string {
  return `${route.method.toUpperCase()} ${route.path}`;
}

/** Operations whose `name` is a new routine's, not one to look up: every other top-level `name` names a routine. */
const NEW_NAME: ReadonlySet<string> = new Set(["POST /v1/routines", "save_routine"]);

/** What a set of schema properties names by id (or a routine by name), and whether it must. */
function aimsOfProperties(operation: string, schemas: (Route["body"] | undefined)[]): Pick<Operation, "aims" | "targetOptional"> {
  for (const schema of schemas) {
    if (!schema) continue;
    const { properties = {}, required = [] } = jsonSchemaOf(schema);
    for (const [field, aims] of [["from_action_id", "stepsAction"], ["action_id", "action"], ["account_id", "account"]] as const) {
      if (Object.hasOwn(properties, field)) return { aims, targetOptional: !required.includes(field) };
    }
    if (Object.hasOwn(properties, "name") && !NEW_NAME.has(operation)) return { aims: "routine", targetOptional: !required.includes("name") };
  }
  return { aims: "nothing", targetOptional: false };
}

/**
 * What a path's `{id}` (or a routine's `{name}`) names, by the collection it is under; a new
 * collection must be added here (and to `idsFor`).
 */
const PATH_TARGETS: readonly [prefix: string, param: "id" | "name", aims: Exclude<Operation["aims"], "nothing">][] = [
  ["/v1/accounts/", "id", "account"],
  ["/v1/actions/", "id", "action"],
  ["/v1/webhooks/", "id", "webhook"],
  ["/v1/feedback/", "id", "feedback"],
  ["/v1/routines/", "name", "routine"],
];

/** The path's parameter naming its target (`id`, or `name` for a routine), if it has one. */
function targetParam(path: string): "id" | "name" | undefined {
  return (["id", "name"] as const).find((param) => path.includes(`{${param}}`));
}

export function pathAims(path: string): Exclude<Operation["aims"], "nothing"> {
  const param = targetParam(path);
  const found = PATH_TARGETS.find(([prefix, named]) => path.startsWith(prefix) && named === param);
  if (!found) throw new Error(`${path}: what does its {${param}} name? Add its collection to PATH_TARGETS`);
  return found[2];
}

export const OPERATIONS: readonly Operation[] = [
  ...ROUTES.map((route): Operation => {
    const inPath = targetParam(route.path) ? { aims: pathAims(route.path), targetOptional: false } : undefined;
    return { surface: "rest", route, name: restName(route), ...(inPath ?? aimsOfProperties(restName(route), [route.body, route.query])) };
  }),
  ...TOOLS.map((tool): Operation => ({ surface: "mcp", tool, name: tool.name, ...aimsOfProperties(tool.name, [tool.input]) })),
];

export function targetsOf(operation: Operation): readonly TargetSpec[] {
  if (operation.aims === "nothing") return [NO_TARGET];
  return operation.targetOptional ? [...TARGETS, NO_TARGET] : TARGETS;
}

/** The ids a case aims at, one of each kind (a retry names an endpoint and one of its deliveries). */
export interface TargetedIds {
  account?: string;
  action?: string;
  webhook?: string;
  delivery?: string;
  feedback?: string;
  stepsAction?: string;
  routine?: string;
}

/** The ids a target stands for; fresh targets for the workspaces, made-up ones for nothing. */
export function idsFor(target: TargetSpec, fresh: { own: TargetIds; other: TargetIds }, serial: number): TargetedIds {
  const of = (ids: TargetIds): TargetedIds => ({
    account: ids.accountId,
    action: ids.actionId,
    webhook: ids.webhookId,
    delivery: ids.deliveryId,
    feedback: ids.feedbackId,
    stepsAction: ids.stepsActionId,
    routine: ids.routineName,
  });
  switch (target.name) {
    case "own":
      return of(fresh.own);
    case "other workspace's":
      return of(fresh.other);
    case "nonexistent":
      return {
        account: `acc_nothing${serial}xxxxxxxxxxxx`,
        action: `act_nothing${serial}xxxxxxxxxxxx`,
        webhook: `whe_nothing${serial}xxxxxxxxxxxx`,
        delivery: `dlv_nothing${serial}xxxxxxxxxxxx`,
        feedback: `fbk_nothing${serial}xxxxxxxxxxxx`,
        stepsAction: `act_nothing${serial}xxxxxxxxxxxx`,
        routine: `nothing_${serial}`,
      };
    case "odd-shaped nonexistent":
      // Any shape that names nothing is a 404 too (DESIGN §5): no prefix, a space, an RTL mark, a non-ASCII sign.
      return {
        account: `no such account \u202e ✓ ${serial}`,
        action: `no such action \u202e ✓ ${serial}`,
        webhook: `no such webhook \u202e ✓ ${serial}`,
        delivery: `no such delivery \u202e ✓ ${serial}`,
        feedback: `no such feedback \u202e ✓ ${serial}`,
        stepsAction: `no such action \u202e ✓ ${serial}`,
        routine: `No such routine \u202e ✓ ${serial}`,
      };
    case "none":
      return {};
  }
}

/**
 * Valid values for the fields that are not ids: known platform, unique username, no waiting, a
 * webhook URL that takes nothing, a new routine's unique name (or the routine aimed at).
 */
function fillFor(ids: TargetedIds, serial: number, operation: string): Record<string, unknown> {
  return {
    platform: "sandbox",
    username: `user-${serial}`,
    answer: "123456",
    wait_seconds: 0,
    url: UNREACHABLE_HOOK,
    message: `matrix feedback ${serial}`,
    name: NEW_NAME.has(operation) || ids.routine === undefined ? `matrix_${serial}` : ids.routine,
    // A routine's one step: the platform's home page.
    steps: [{ goto: "/" }],
    ...(ids.account === undefined ? {} : { account_id: ids.account }),
    ...(ids.action === undefined ? {} : { action_id: ids.action }),
    ...(ids.stepsAction === undefined ? {} : { from_action_id: ids.stepsAction }),
  };
}

export interface RestCall {
  method: string;
  path: string;
  body?: unknown;
}

/** A valid request for the route, aimed at the ids (in the path, the body or the query). */
export function restCall(route: Route, ids: TargetedIds, serial: number): RestCall {
  const fill = fillFor(ids, serial, restName(route));
  const path = route.path.replace(/\{(\w+)\}/g, (_whole, name: string) => {
    const targeted = name === "id" || name === "name";
    const id = targeted ? ids[pathAims(route.path)] : name === "delivery_id" ? ids.delivery : undefined;
    if (id === undefined && !targeted) throw new Error(`${route.path}: no id is known for {${name}}`);
    return encodeURIComponent(id ?? "");
  });
  const query = route.query ? (exampleOf(route.query, fill) as Record<string, unknown>) : {};
  const search = new URLSearchParams(Object.entries(query).map(([name, value]) => [name, String(value)])).toString();
  return { method: route.method.toUpperCase(), path: search ? `${path}?${search}` : path, ...(route.body ? { body: exampleOf(route.body, fill) } : {}) };
}

/** Valid arguments for the tool, aimed at the ids. */
export function toolArguments(tool: Tool, ids: TargetedIds, serial: number): Record<string, unknown> {
  return exampleOf(tool.input, fillFor(ids, serial, tool.name)) as Record<string, unknown>;
}

/**
 * Ids the principal may not see among the fresh targets: no response of its may carry
 * them, except ids it named itself (an error may echo what it was sent).
 */
export function hiddenIds(principal: PrincipalSpec, fresh: { own: TargetIds; other: TargetIds }, named: TargetedIds): string[] {
  const idsOf = (ids: TargetIds): string[] => [ids.accountId, ids.actionId, ids.actionAccountId, ids.webhookId, ids.deliveryId, ids.feedbackId, ids.eventId, ids.stepsActionId];
  // A routine is the workspace's: hidden from another workspace's keys only (a limited key reads its own workspace's).
  const own = idsOf(fresh.own);
  const other = [...idsOf(fresh.other), fresh.other.routineName];
  const hidden = principal.workspace === undefined ? [...own, fresh.own.routineName, ...other] : principal.workspace === "own" ? (principal.limited ? [...own, ...other] : other) : [...own, fresh.own.routineName];
  const sent = new Set(Object.values(named));
  return hidden.filter((id) => !sent.has(id));
}
