import type { WorldKeys } from "./world.js";

/**
 * Who may do what, as DESIGN §5 and docs/decisions.md state it, written out once here so
 * the access matrix reads as the rule and every route or tool is held to it.
 */

export type Role = "admin" | "operator" | "read_only";
export type Permission = "read" | "act" | "manage_accounts" | "pay" | "manage_webhooks" | "read_feedback";
type Workspace = "own" | "other";

/**
 * docs/decisions.md "Roles": admin everything; operator read and run/answer/cancel, sign-in links; read_only GET only.
 * DESIGN §13: webhook endpoints and their deliveries, and reading the workspace's feedback (and its
 * screenshots), are the admin's; sending feedback is `read`. (`manage_keys` is the web app's only,
 * no REST route or tool needs it: the web tests hold it.)
 */
const ROLE_GRANTS: Record<Role, readonly Permission[]> = {
  admin: ["read", "act", "manage_accounts", "pay", "manage_webhooks", "read_feedback"],
  operator: ["read", "act"],
  read_only: ["read"],
};

/** What each REST route and MCP tool needs of the key's role. A route or tool missing here fails the matrix. */
export const PERMISSION_OF: Readonly<Record<string, Permission>> = {
  "POST /v1/accounts": "manage_accounts",
  "GET /v1/accounts": "read",
  "GET /v1/accounts/{id}": "read",
  "PATCH /v1/accounts/{id}": "manage_accounts",
  "DELETE /v1/accounts/{id}": "manage_accounts",
  "POST /v1/accounts/{id}/sign-in-links": "act",
  "POST /v1/accounts/{id}/check": "act",
  "POST /v1/accounts/{id}/inbox/rotate": "manage_accounts",
  "POST /v1/accounts/{id}/messages": "act",
  "GET /v1/accounts/{id}/messages": "manage_accounts",
  "POST /v1/actions": "act",
  "GET /v1/actions": "read",
  "GET /v1/actions/{id}": "read",
  "POST /v1/actions/{id}/answer": "act",
  "POST /v1/actions/{id}/cancel": "act",
  "GET /v1/credits": "read",
  "POST /v1/credits/top-ups": "pay",
  "GET /v1/platforms": "read",
  "POST /v1/webhooks": "manage_webhooks",
  "GET /v1/webhooks": "manage_webhooks",
  "DELETE /v1/webhooks/{id}": "manage_webhooks",
  "GET /v1/webhooks/{id}/deliveries": "manage_webhooks",
  "POST /v1/webhooks/{id}/deliveries/{delivery_id}/retry": "manage_webhooks",
  // An event stream: only its status and first bytes are checked, then the request is let go.
  "GET /v1/events": "read",
  // Any key may send feedback; about an action (`action_id`) only one it may see.
  "POST /v1/feedback": "read",
  "GET /v1/feedback": "read_feedback",
  "GET /v1/feedback/{id}/screenshot": "read_feedback",
  run_action: "act",
  answer_challenge: "act",
  get_action: "read",
  cancel_action: "act",
  list_actions: "read",
  connect_account: "manage_accounts",
  update_account: "manage_accounts",
  remove_account: "manage_accounts",
  create_sign_in_link: "act",
  forward_message: "act",
  check_account: "act",
  list_accounts: "read",
  get_credits: "read",
  list_platforms: "read",
  top_up_credits: "pay",
  // Like POST /v1/feedback: any key, about an action it may see when it names one.
  send_feedback: "read",
  // Routines (DESIGN §14): saving, a new version and deleting act; reading reads.
  "POST /v1/routines": "act",
  "GET /v1/routines": "read",
  "GET /v1/routines/{name}": "read",
  "PUT /v1/routines/{name}": "act",
  "DELETE /v1/routines/{name}": "act",
  save_routine: "act",
  list_routines: "read",
  delete_routine: "act",
};

/**
 * Operations a key with an allow-list may not do, whatever they name (403 before any lookup):
 * adding an account (it could not use it), and saving, versioning or deleting a routine (a
 * routine is the whole workspace's: decisions.md, issue 43 D).
 */
export const LIMITED_MAY_NOT: ReadonlySet<string> = new Set([
  "POST /v1/accounts",
  "connect_account",
  "POST /v1/routines",
  "PUT /v1/routines/{name}",
  "DELETE /v1/routines/{name}",
  "save_routine",
  "delete_routine",
]);

export interface PrincipalSpec {
  name: string;
  key: keyof WorldKeys | "none";
  /** Undefined for no key and for a key nobody issued. */
  role?: Role;
  workspace?: Workspace;
  /**
   * Has an account allow-list that names none of the targets: not their accounts, not the
   * accounts their actions are on, and none of the accounts a webhook endpoint or a feedback
   * target reaches (see "Allow-lists and workspace objects" below).
   */
  limited: boolean;
}

export const PRINCIPALS: readonly PrincipalSpec[] = [
  { name: "no key", key: "none", limited: false },
  { name: "bad key", key: "bad", limited: false },
  { name: "read_only", key: "readOnly", role: "read_only", workspace: "own", limited: false },
  { name: "operator", key: "operator", role: "operator", workspace: "own", limited: false },
  { name: "admin", key: "admin", role: "admin", workspace: "own", limited: false },
  { name: "other workspace's admin", key: "otherAdmin", role: "admin", workspace: "other", limited: false },
  { name: "operator limited to other accounts", key: "limitedOperator", role: "operator", workspace: "own", limited: true },
  { name: "admin limited to other accounts", key: "limitedAdmin", role: "admin", workspace: "own", limited: true },
];

export interface TargetSpec {
  name: "own" | "other workspace's" | "nonexistent" | "odd-shaped nonexistent" | "none";
  /** Where the target lives; undefined when it names nothing (or there is none). */
  workspace?: Workspace;
}

export const TARGETS: readonly TargetSpec[] = [
  { name: "own", workspace: "own" },
  { name: "other workspace's", workspace: "other" },
  { name: "nonexistent" },
  { name: "odd-shaped nonexistent" },
];
export const NO_TARGET: TargetSpec = { name: "none" };

export interface OperationSpec {
  /** `METHOD /path` of a route, or a tool's name. */
  name: string;
  /**
   * What the operation names: by id an account, an action, a webhook endpoint (and one of its
   * deliveries), a feedback, a succeeded browser_steps action to save a routine from; by name a
   * routine; or nothing.
   */
  aims: "account" | "action" | "webhook" | "feedback" | "stepsAction" | "routine" | "nothing";
}

/**
 * Allow-lists and workspace objects (DESIGN §13 is silent; decided from src/events/webhooks.ts,
 * feedback.ts and event-stream.ts, and decisions.md "Roles": a limited key "sees only its accounts
 * and their actions, and gets 403 for the others").
 *
 * - A webhook endpoint reaches the accounts it was made for: the engine gives an endpoint made by
 *   a key with an allow-list that list (it then only gets those accounts' events), and one made by
 *   a key without a list every account. A limited key may create endpoints (they are scoped to its
 *   list), and may see, delete, read the deliveries of and retry only endpoints whose reach lies
 *   within its list: the others' deliveries name actions and accounts it may not see, and deleting
 *   or replaying them acts on what it may not touch. Any other endpoint of its workspace is, like
 *   an account outside its list, a 403; another workspace's, or none, a 404.
 * - A feedback is about the action it names (if any): a limited key may read it, and its screenshot
 *   (the page of that action's account at the failure), only when that action is on one of its
 *   accounts; otherwise 403 in its workspace, 404 outside it. Sending feedback about an action is
 *   held to the action's rule (`action_id` is aimed at like any body id).
 * - The event stream (`GET /v1/events`) names nothing: any key with `read`, filtered to its accounts.
 * - A routine is the workspace's, not an account's: a limited key may list and read every routine
 *   of its workspace (and run them on its accounts), but may not save, version or delete one
 *   (LIMITED_MAY_NOT). Another workspace's routine, or none, is a 404. Saving from an action
 *   (`save_routine`) needs an action the key may see, which a limited key is refused before.
 *
 * The fixtures' endpoints are made by the workspace's unlimited admin (they reach every account)
 * and their feedback is about the fixture action, so for the limited keys every one is outside the
 * list, as their accounts and actions are.
 */
export type Outcome = { ok: true } | { ok: false; code: "unauthorized" | "forbidden" | "not_found" };

const refused = (code: "unauthorized" | "forbidden" | "not_found"): Outcome => ({ ok: false, code });

/** The whole rule: what a principal gets for an operation on a target. */
export function expectedOutcome(principal: PrincipalSpec, operation: OperationSpec, target: TargetSpec): Outcome {
  if (!principal.role) return refused("unauthorized"); // no key, or a key nobody issued
  const permission = PERMISSION_OF[operation.name];
  if (!permission) throw new Error(`no permission is stated for ${operation.name}: add it to PERMISSION_OF`);
  if (!ROLE_GRANTS[principal.role].includes(permission)) return refused("forbidden"); // the role decides, whatever the target
  if (LIMITED_MAY_NOT.has(operation.name) && principal.limited) return refused("forbidden");
  if (operation.aims === "nothing" || target.name === "none") return { ok: true };
  if (target.workspace !== principal.workspace) return refused("not_found"); // another workspace's or nothing: 404, never 403
  if (operation.aims === "routine") return { ok: true }; // the workspace's: a limited key reads it (it was refused above if it changes it)
  if (principal.limited) return refused("forbidden"); // in the workspace, outside the allow-list
  return { ok: true };
}
