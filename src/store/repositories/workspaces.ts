import { sql } from "kysely";
import type { KeyRole } from "../../domain/keys.js";
import type { Queries } from "../queries.js";
import type { KeyRecord, WorkspaceRecord } from "../records.js";
import { orUndefined } from "../records.js";

interface KeyRow {
  id: string;
  workspace_id: string;
  prefix: string;
  role: string;
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
  return { ...row, role: row.role as KeyRole, account_ids: ids === undefined ? undefined : (JSON.parse(ids) as string[]) };
}

const WORKSPACE = ["id", "name", "balance", "created_at"] as const;

/**
 * Workspaces and their keys. Ties in `created_at` go by `rowid`: SQLite's own, on PostgreSQL an
 * identity column of that name (`migrations/postgres`), so rows keep the order they were added in.
 */
export class WorkspaceRepository {
  constructor(private readonly q: Queries) {}

  async insert(workspace: Omit<WorkspaceRecord, "balance">): Promise<void> {
    await this.q.db
      .insertInto("workspaces")
      .values({ ...workspace, balance: 0 })
      .execute();
  }

  get(id: string): Promise<WorkspaceRecord | undefined> {
    return this.q.db.selectFrom("workspaces").select(WORKSPACE).where("id", "=", id).executeTakeFirst();
  }

  byName(name: string): Promise<WorkspaceRecord | undefined> {
    return this.q.db.selectFrom("workspaces").select(WORKSPACE).where("name", "=", name).executeTakeFirst();
  }

  first(): Promise<WorkspaceRecord | undefined> {
    return this.q.db.selectFrom("workspaces").select(WORKSPACE).orderBy("created_at").orderBy(sql`rowid`).limit(1).executeTakeFirst();
  }

  async count(): Promise<number> {
    const row = await this.q.db
      .selectFrom("workspaces")
      .select(({ fn }) => fn.countAll<number>().as("count"))
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  async insertKey(key: KeyRecord & { key_hash: string }): Promise<void> {
    await this.q.db
      .insertInto("api_keys")
      .values({ ...key, account_ids: key.account_ids ? JSON.stringify(key.account_ids) : null })
      .execute();
  }

  /** Every key (of one workspace, when given), oldest first, revoked ones included. */
  listKeys(workspaceId?: string): Promise<KeyListing[]> {
    return this.#listings(workspaceId === undefined ? undefined : { workspaceId });
  }

  /** One key as `keys list` shows it, revoked or not. */
  async keyListing(id: string): Promise<KeyListing | undefined> {
    return (await this.#listings({ id }))[0];
  }

  async #listings(only?: { workspaceId: string } | { id: string }): Promise<KeyListing[]> {
    let query = this.q.db
      .selectFrom("api_keys as k")
      .innerJoin("workspaces as w", "w.id", "k.workspace_id")
      .select(["k.id", "k.workspace_id", "k.prefix", "k.role", "k.account_ids", "k.created_at", "k.revoked_at", "w.name as workspace_name"]);
    if (only && "workspaceId" in only) query = query.where("k.workspace_id", "=", only.workspaceId);
    if (only && "id" in only) query = query.where("k.id", "=", only.id);
    const rows = await query.orderBy("k.created_at").orderBy(sql`k.rowid`).execute();
    return rows.map((row) => ({ ...toKey(row), workspace_name: row.workspace_name, revoked_at: orUndefined(row.revoked_at) }));
  }

  /** Revokes a key from now on; false when it was already revoked (or does not exist). */
  async revokeKey(id: string, now: string): Promise<boolean> {
    this.q.changed(keySubject(id));
    const result = await this.q.db.updateTable("api_keys").set({ revoked_at: now }).where("id", "=", id).where("revoked_at", "is", null).executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  /**
   * Every request's key: kept until it may have changed (a revoked key is refused at once here; on
   * PostgreSQL, by every coordinator within one change-feed round trip: the row's trigger notifies
   * `key:<id>`, migrations/postgres 013). Only the key's own row is read: nothing else changes its
   * standing. An unknown or revoked key is not kept.
   */
  keyByHash(keyHash: string): Promise<KeyRecord | undefined> {
    return this.q.cached(
      `key:${keyHash}`,
      async () => {
        const row = await this.q.db
          .selectFrom("api_keys")
          .select(["id", "workspace_id", "prefix", "role", "account_ids", "created_at"])
          .where("key_hash", "=", keyHash)
          .where("revoked_at", "is", null)
          .executeTakeFirst();
        return row && toKey(row);
      },
      (key) => keySubject(key.id),
    );
  }
}

/** The change-feed subject of a key's row. */
function keySubject(id: string): string {
  return `key:${id}`;
}
