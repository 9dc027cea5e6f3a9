import { CHECK_TYPE } from "../../domain/health.js";
import { AppError } from "../../domain/errors.js";
import { ROLE_PERMISSIONS, type Permission, type Principal } from "../../domain/keys.js";
import type { Store } from "../../store/index.js";
import type { AccountRecord, ActionRecord } from "../../store/records.js";

const PERMISSION_WORDS: Record<Permission, string> = {
  read: "read this workspace",
  act: "run, answer or cancel actions",
  manage_accounts: "create, change or delete accounts",
  pay: "top up credits",
  manage_keys: "manage API keys",
  manage_webhooks: "manage webhooks",
  read_feedback: "read the workspace's feedback",
};

export function requirePermission(principal: Principal, permission: Permission): void {
  if (!ROLE_PERMISSIONS[principal.role].has(permission)) {
    throw new AppError("forbidden", `This key (role ${principal.role}) may not ${PERMISSION_WORDS[permission]}.`, { role: principal.role });
  }
}

/** Whether the key's allow-list (if it has one) includes the account. */
export function allows(principal: Principal, accountId: string): boolean {
  return principal.accountIds === undefined || principal.accountIds.includes(accountId);
}

/** 403 unless the key's allow-list includes the account; `details` names only what the caller sent. */
function requireAllowed(principal: Principal, accountId: string, message: string, details: Record<string, string>): void {
  if (!allows(principal, accountId)) throw new AppError("forbidden", message, details);
}

/** Whether `visibleAction` would hand the key this action (its workspace's, an account it may act on), without throwing. */
export function canSee(principal: Principal, action: ActionRecord): boolean {
  return action.workspace_id === principal.workspaceId && allows(principal, action.account_id);
}

/** The account if the key's workspace has it (else 404) and its allow-list includes it (else 403). */
export async function visibleAccount(store: Store, principal: Principal, accountId: string): Promise<AccountRecord> {
  const account = await store.accounts.get(accountId);
  if (!account || account.workspace_id !== principal.workspaceId) {
    throw new AppError("not_found", "No such account.", { account_id: accountId });
  }
  requireAllowed(principal, account.id, "This key may not act on this account.", { account_id: accountId });
  return account;
}

/** The action if the key's workspace has it (else 404) and may see its account (else 403). */
export async function visibleAction(store: Store, principal: Principal, actionId: string): Promise<ActionRecord> {
  const action = await store.actions.get(actionId);
  // A health check is the engine's own, not an action of anyone's.
  if (!action || action.workspace_id !== principal.workspaceId || action.type === CHECK_TYPE) {
    throw new AppError("not_found", "No such action.", { action_id: actionId });
  }
  requireAllowed(principal, action.account_id, "This key may not act on this action's account.", { action_id: actionId });
  return action;
}
