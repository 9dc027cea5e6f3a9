import { randomBytes } from "node:crypto";
import { AppError } from "../../domain/errors.js";
import type { KeyRole, Principal } from "../../domain/keys.js";
import { sha256 } from "../../store/crypto.js";
import type { Store } from "../../store/index.js";
import type { WorkspaceRecord } from "../../store/records.js";
import type { KeyListing } from "../../store/index.js";
import type { EngineCore } from "../core.js";
import { newId } from "../ids.js";
import { requirePermission } from "./permissions.js";

const KEY_PREFIX = "as_";

/** A new key: the plaintext exists only in the return value; the store keeps its hash. */
export interface IssuedKey {
  key: string;
  id: string;
  workspace: WorkspaceRecord;
  role: KeyRole;
  account_ids: string[] | undefined;
}

export function createWorkspace(store: Store, name: string, freeCredits: number, now: string): Promise<WorkspaceRecord> {
  return store.transaction(async () => {
    const id = newId("ws");
    await store.workspaces.insert({ id, name, created_at: now });
    if (freeCredits > 0) await store.ledger.append({ workspace_id: id, kind: "grant", amount: freeCredits, reference: `welcome:${id}`, created_at: now });
    return (await store.workspaces.get(id))!;
  });
}

export function issueKey(
  store: Store,
  options: { workspaceName?: string | undefined; role: KeyRole; accountIds?: string[] | undefined; freeCredits: number; now: string },
): Promise<IssuedKey> {
  return store.transaction(async () => {
    const workspace =
      (options.workspaceName ? await store.workspaces.byName(options.workspaceName) : await store.workspaces.first()) ??
      (await createWorkspace(store, options.workspaceName ?? "default", options.freeCredits, options.now));
    for (const accountId of options.accountIds ?? []) {
      const account = await store.accounts.get(accountId);
      if (!account || account.workspace_id !== workspace.id) {
        throw new AppError("invalid_request", `Account ${accountId} is not in workspace ${workspace.name}.`);
      }
    }
    const key = KEY_PREFIX + randomBytes(32).toString("base64url");
    const id = newId("key");
    await store.workspaces.insertKey({
      id,
      workspace_id: workspace.id,
      key_hash: sha256(key),
      prefix: key.slice(0, 10),
      role: options.role,
      account_ids: options.accountIds,
      created_at: options.now,
    });
    return { key, id, workspace, role: options.role, account_ids: options.accountIds };
  });
}

/** The principal of a Bearer key, or undefined when the key is unknown or revoked. */
export async function authenticate(store: Store, key: string): Promise<Principal | undefined> {
  if (!key.startsWith(KEY_PREFIX) || key.length > 200) return undefined;
  const record = await store.workspaces.keyByHash(sha256(key));
  return record && { workspaceId: record.workspace_id, keyId: record.id, role: record.role, accountIds: record.account_ids };
}

/**
 * Keys are managed by an admin key that may see every account: one limited to some accounts
 * could otherwise issue itself a key without the limit.
 */
function requireKeyManager(principal: Principal): void {
  requirePermission(principal, "manage_keys");
  if (principal.accountIds) throw new AppError("forbidden", "This key is limited to some accounts and may not manage API keys.", { role: principal.role });
}

/** API keys: issued, listed, revoked (by the CLI, and by a workspace's admin in the web app), and who a key is. */
export class Keys {
  constructor(private readonly core: EngineCore) {}

  /** On an empty data dir: the first workspace and its admin key (returned once, never stored). */
  async bootstrap(): Promise<IssuedKey | undefined> {
    const { store } = this.core;
    // One transaction: coordinators started together on one PostgreSQL create one workspace between them.
    return store.transaction(async () => ((await store.workspaces.count()) > 0 ? undefined : this.issue({ role: "admin" })));
  }

  issue(options: { workspaceName?: string | undefined; role: KeyRole; accountIds?: string[] | undefined }): Promise<IssuedKey> {
    return issueKey(this.core.store, { ...options, freeCredits: this.core.freeCredits, now: this.core.lifecycle.now() });
  }

  /** Every key (of the named workspace, when given), revoked ones included; never a key's secret or hash. */
  async list(workspaceName?: string): Promise<KeyListing[]> {
    const { store } = this.core;
    if (workspaceName === undefined) return store.workspaces.listKeys();
    const workspace = await store.workspaces.byName(workspaceName);
    if (!workspace) throw new AppError("not_found", `No workspace named "${workspaceName}".`);
    return store.workspaces.listKeys(workspace.id);
  }

  /**
   * Revokes a key: from now on every surface (REST, MCP, live, in every process on this data dir)
   * refuses it with 401. Returns the key as it now is; `revoked` is false when it already was.
   */
  revoke(id: string): Promise<{ key: KeyListing; revoked: boolean }> {
    const { store, lifecycle } = this.core;
    return store.transaction(async () => {
      const revoked = await store.workspaces.revokeKey(id, lifecycle.now());
      await store.webSessions.deleteForKey(id);
      const key = await store.workspaces.keyListing(id);
      if (!key) throw new AppError("not_found", `No key ${id}: \`action-service keys list\` shows every key's id.`);
      return { key, revoked };
    });
  }

  /** The workspace's keys as an admin of it sees them (web app): never a secret or hash. */
  ofWorkspace(principal: Principal): Promise<KeyListing[]> {
    requireKeyManager(principal);
    return this.core.store.workspaces.listKeys(principal.workspaceId);
  }

  /** A new key in the caller's workspace; its plaintext exists only in the return value. */
  async createInWorkspace(principal: Principal, options: { role: KeyRole; accountIds?: string[] | undefined }): Promise<IssuedKey> {
    requireKeyManager(principal);
    const workspace = (await this.core.store.workspaces.get(principal.workspaceId))!;
    return this.issue({ workspaceName: workspace.name, role: options.role, accountIds: options.accountIds });
  }

  /** Revokes a key of the caller's workspace (another workspace's key is a 404, like any id it cannot see). */
  async revokeInWorkspace(principal: Principal, id: string): Promise<{ key: KeyListing; revoked: boolean }> {
    requireKeyManager(principal);
    const key = await this.core.store.workspaces.keyListing(id);
    if (!key || key.workspace_id !== principal.workspaceId) throw new AppError("not_found", "No such key.", { key_id: id });
    return this.revoke(id);
  }

  /** The principal of a Bearer key, or undefined when the key is unknown or revoked. */
  authenticate(key: string): Promise<Principal | undefined> {
    return authenticate(this.core.store, key);
  }

  /** The local owner (stdio MCP): admin of the first workspace, created when the data dir is empty. */
  async ownerPrincipal(): Promise<Principal> {
    const workspace = (await this.core.store.workspaces.first()) ?? (await this.issue({ role: "admin" })).workspace;
    return { workspaceId: workspace.id, keyId: undefined, role: "admin", accountIds: undefined };
  }
}
