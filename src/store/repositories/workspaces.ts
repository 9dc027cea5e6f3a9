import type { Db } from "../database.js";
import type { ReadCache } from "../read-cache.js";
import type { KeyRecord, WorkspaceRecord } from "../records.js";
import { orUndefined } from "../records.js";
import type { KeyRole } from "../../domain/keys.js";

interface KeyRow {
  id: string;
  workspace_id: string;
  prefix: string;
  role: KeyRole;
  account_ids: string | null;
  created_at: string;
}

/** A key as `keys list` shows it: never its hash. */
export interface KeyListing extends KeyRecord {
  workspace_name: string;
  revoked_at: string | undefined;
}

function toKey(row: KeyRow): KeyRecord {
  const ids = orUndefined(row.account_ids);
  return { ...row, account_ids: ids === undefined ? undefined : (JSON.parse(ids) as string[]) };
}

export class WorkspaceRepository {
  constructor(
    private readonly db: Db,
    private readonly cache: ReadCache,
  ) {}

  insert(workspace: Omit<WorkspaceRecord, "balance">): void {
    this.db.prepare("INSERT INTO workspaces (id, name, balance, created_at) VALUES (@id, @name, 0, @created_at)").run(workspace);
  }

  get(id: string): WorkspaceRecord | undefined {
    return this.db.prepare("SELECT * FROM workspaces WHERE id = ?").get(id) as WorkspaceRecord | undefined;
  }

  byName(name: string): WorkspaceRecord | undefined {
    return this.db.prepare("SELECT * FROM workspaces WHERE name = ?").get(name) as WorkspaceRecord | undefined;
  }

  first(): WorkspaceRecord | undefined {
    return this.db.prepare("SELECT * FROM workspaces ORDER BY created_at, rowid LIMIT 1").get() as WorkspaceRecord | undefined;
  }

  count(): number {
    return this.db.prepare("SELECT count(*) FROM workspaces").pluck().get() as number;
  }

  insertKey(key: KeyRecord & { key_hash: string }): void {
    this.db
      .prepare(
        `INSERT INTO api_keys (id, workspace_id, key_hash, prefix, role, account_ids, created_at)
         VALUES (@id, @workspace_id, @key_hash, @prefix, @role, @account_ids, @created_at)`,
      )
      .run({ ...key, account_ids: key.account_ids ? JSON.stringify(key.account_ids) : null });
  }

  /** Every key (of one workspace, when given), oldest first, revoked ones included. */
  listKeys(workspaceId?: string): KeyListing[] {
    return this.#listings("@workspace_id IS NULL OR k.workspace_id = @workspace_id", { workspace_id: workspaceId ?? null });
  }

  /** One key as `keys list` shows it, revoked or not. */
  keyListing(id: string): KeyListing | undefined {
    return this.#listings("k.id = @id", { id })[0];
  }

  #listings(where: string, parameters: Record<string, string | null>): KeyListing[] {
    const rows = this.db
      .prepare(
        `SELECT k.id, k.workspace_id, k.prefix, k.role, k.account_ids, k.created_at, k.revoked_at, w.name AS workspace_name
           FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id WHERE ${where} ORDER BY k.created_at, k.rowid`,
      )
      .all(parameters) as (KeyRow & { revoked_at: string | null; workspace_name: string })[];
    return rows.map((row) => ({ ...toKey(row), workspace_name: row.workspace_name, revoked_at: orUndefined(row.revoked_at) }));
  }

  /** Revokes a key from now on; false when it was already revoked (or does not exist). */
  revokeKey(id: string, now: string): boolean {
    return this.db.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL").run(now, id).changes === 1;
  }

  /** Every request's key: kept until the database changes (a revoked key is refused at once). */
  keyByHash(keyHash: string): KeyRecord | undefined {
    return this.cache.get(`key:${keyHash}`, () => {
      const row = this.db
        .prepare("SELECT id, workspace_id, prefix, role, account_ids, created_at FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL")
        .get(keyHash) as KeyRow | undefined;
      return row && toKey(row);
    });
  }
}
