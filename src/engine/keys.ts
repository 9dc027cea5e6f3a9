import { randomBytes } from "node:crypto";
import { AppError } from "../domain/errors.js";
import type { KeyRole, Principal } from "../domain/keys.js";
import { sha256 } from "../store/crypto.js";
import type { Store } from "../store/index.js";
import type { WorkspaceRecord } from "../store/records.js";
import { newId } from "./ids.js";

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
