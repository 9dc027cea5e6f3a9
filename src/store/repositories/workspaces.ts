import type { Db } from "../database.js";
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

function toKey(row: KeyRow): KeyRecord {
  const ids = orUndefined(row.account_ids);
  return { ...row, account_ids: ids === undefined ? undefined : (JSON.parse(ids) as string[]) };
}

export class WorkspaceRepository {
  constructor(private readonly db: Db) {}

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

  keyByHash(keyHash: string): KeyRecord | undefined {
    const row = this.db
      .prepare("SELECT id, workspace_id, prefix, role, account_ids, created_at FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL")
      .get(keyHash) as KeyRow | undefined;
    return row && toKey(row);
  }
}
