/** API key roles. */
export const KEY_ROLES = ["admin", "operator", "read_only"] as const;
export type KeyRole = (typeof KEY_ROLES)[number];

/** Who is asking: the workspace a key belongs to, its role and its account allow-list. */
export interface Principal {
  workspaceId: string;
  keyId: string | undefined;
  role: KeyRole;
  /** When set, the key may only see and act on these accounts. */
  accountIds: readonly string[] | undefined;
}

/** What each role may do. */
export const ROLE_PERMISSIONS: Readonly<Record<KeyRole, ReadonlySet<Permission>>> = {
  admin: new Set(["read", "act", "manage_accounts", "pay", "manage_keys", "manage_webhooks", "read_feedback"]),
  operator: new Set(["read", "act"]),
  read_only: new Set(["read"]),
};

/** read: GET anything; act: run, answer, cancel actions and send sign-in links; manage_accounts: create, change, delete accounts; pay: top up; manage_keys: create, list, revoke the workspace's keys (web app); manage_webhooks: webhook endpoints and their deliveries; read_feedback: the workspace's feedback and its screenshots. */
export type Permission = "read" | "act" | "manage_accounts" | "pay" | "manage_keys" | "manage_webhooks" | "read_feedback";
