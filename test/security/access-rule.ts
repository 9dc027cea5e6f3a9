import type { WorldKeys } from "./world.js";

/**
 * Who may do what, as DESIGN §5 and docs/decisions.md state it, written out once here so
 * the access matrix reads as the rule and every route or tool is held to it.
 */

export type Role = "admin" | "operator" | "read_only";
export type Permission = "read" | "act" | "manage_accounts" | "pay";
type Workspace = "own" | "other";

/** docs/decisions.md "Roles": admin everything; operator read and run/answer/cancel, sign-in links; read_only GET only. */
const ROLE_GRANTS: Record<Role, readonly Permission[]> = {
  admin: ["read", "act", "manage_accounts", "pay"],
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
  "POST /v1/actions": "act",
  "GET /v1/actions": "read",
  "GET /v1/actions/{id}": "read",
  "POST /v1/actions/{id}/answer": "act",
  "POST /v1/actions/{id}/cancel": "act",
  "GET /v1/credits": "read",
  "POST /v1/credits/top-ups": "pay",
  "GET /v1/platforms": "read",
  run_action: "act",
  answer_challenge: "act",
  get_action: "read",
  cancel_action: "act",
  list_actions: "read",
  connect_account: "manage_accounts",
  update_account: "manage_accounts",
  remove_account: "manage_accounts",
  create_sign_in_link: "act",
  list_accounts: "read",
  get_credits: "read",
  list_platforms: "read",
  top_up_credits: "pay",
  // Feedback touches no account or action; the docs give it no role, so any key may send it (as it may read).
  send_feedback: "read",
};

/** Operations that add an account: a key with an allow-list may not (it could not use it). */
export const ADDS_ACCOUNT: ReadonlySet<string> = new Set(["POST /v1/accounts", "connect_account"]);

export interface PrincipalSpec {
  name: string;
  key: keyof WorldKeys | "none";
  /** Undefined for no key and for a key nobody issued. */
  role?: Role;
  workspace?: Workspace;
  /** Has an account allow-list that names none of the targets. */
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
  /** What the operation names by id: an account, an action, or nothing. */
  aims: "account" | "action" | "nothing";
}

export type Outcome = { ok: true } | { ok: false; code: "unauthorized" | "forbidden" | "not_found" };

const refused = (code: "unauthorized" | "forbidden" | "not_found"): Outcome => ({ ok: false, code });

/** The whole rule: what a principal gets for an operation on a target. */
export function expectedOutcome(principal: PrincipalSpec, operation: OperationSpec, target: TargetSpec): Outcome {
  if (!principal.role) return refused("unauthorized"); // no key, or a key nobody issued
  const permission = PERMISSION_OF[operation.name];
  if (!permission) throw new Error(`no permission is stated for ${operation.name}: add it to PERMISSION_OF`);
  if (!ROLE_GRANTS[principal.role].includes(permission)) return refused("forbidden"); // the role decides, whatever the target
  if (ADDS_ACCOUNT.has(operation.name) && principal.limited) return refused("forbidden");
  if (operation.aims === "nothing" || target.name === "none") return { ok: true };
  if (target.workspace !== principal.workspace) return refused("not_found"); // another workspace's or nothing: 404, never 403
  if (principal.limited) return refused("forbidden"); // in the workspace, outside the allow-list
  return { ok: true };
}
