import type { Sealer } from "../crypto.js";
import type { Queries } from "../queries.js";

/** A routine's name row: which platform, its latest version, whether it was deleted. */
export interface RoutineRecord {
  workspace_id: string;
  name: string;
  platform: string;
  latest: number;
  created_at: string;
  updated_at: string;
  deleted_at: string | undefined;
}

/** One immutable version, its JSON columns as written (the engine parses them). */
export interface RoutineVersionRecord {
  workspace_id: string;
  name: string;
  version: number;
  platform: string;
  description: string;
  params_schema: string;
  steps: string;
  from_action_id: string | undefined;
  created_at: string;
}

/** Routines and their versions (DESIGN §14), and the sealed secret params of the actions that run them. */
export class RoutineRepository {
  constructor(
    private readonly q: Queries,
    private readonly sealer: Sealer,
  ) {}

  /** The name's row, deleted or not. */
  async get(workspaceId: string, name: string): Promise<RoutineRecord | undefined> {
    const row = await this.q.db.selectFrom("routines").selectAll().where("workspace_id", "=", workspaceId).where("name", "=", name).executeTakeFirst();
    return row && { ...row, deleted_at: row.deleted_at ?? undefined };
  }

  /** A workspace's live routines, by name; only one platform's when given. */
  async list(workspaceId: string, platform?: string): Promise<RoutineRecord[]> {
    let query = this.q.db.selectFrom("routines").selectAll().where("workspace_id", "=", workspaceId).where("deleted_at", "is", null);
    if (platform !== undefined) query = query.where("platform", "=", platform);
    const rows = await query.orderBy("name").execute();
    return rows.map((row) => ({ ...row, deleted_at: undefined }));
  }

  /** The latest version of each of a workspace's live routines, by name (one platform's when given): one statement for the list. */
  async latestVersions(workspaceId: string, platform?: string): Promise<RoutineVersionRecord[]> {
    let query = this.q.db
      .selectFrom("routine_versions as v")
      .innerJoin("routines as r", (join) => join.onRef("r.workspace_id", "=", "v.workspace_id").onRef("r.name", "=", "v.name").onRef("r.latest", "=", "v.version"))
      .selectAll("v")
      .where("r.workspace_id", "=", workspaceId)
      .where("r.deleted_at", "is", null);
    if (platform !== undefined) query = query.where("r.platform", "=", platform);
    const rows = await query.orderBy("v.name").execute();
    return rows.map((row) => ({ ...row, from_action_id: row.from_action_id ?? undefined }));
  }

  /**
   * Writes version `latest + 1` of the name (call inside a transaction, after `get`): the first
   * writes its row, a deleted name comes back with its numbering carried on.
   */
  async addVersion(version: RoutineVersionRecord, existing: RoutineRecord | undefined): Promise<void> {
    const { workspace_id, name, platform, created_at } = version;
    if (existing) {
      await this.q.db
        .updateTable("routines")
        .set({ platform, latest: version.version, updated_at: created_at, deleted_at: null })
        .where("workspace_id", "=", workspace_id)
        .where("name", "=", name)
        .execute();
    } else {
      await this.q.db.insertInto("routines").values({ workspace_id, name, platform, latest: version.version, created_at, updated_at: created_at, deleted_at: null }).execute();
    }
    await this.q.db
      .insertInto("routine_versions")
      .values({ ...version, from_action_id: version.from_action_id ?? null })
      .execute();
  }

  async version(workspaceId: string, name: string, version: number): Promise<RoutineVersionRecord | undefined> {
    const row = await this.q.db
      .selectFrom("routine_versions")
      .selectAll()
      .where("workspace_id", "=", workspaceId)
      .where("name", "=", name)
      .where("version", "=", version)
      .executeTakeFirst();
    return row && { ...row, from_action_id: row.from_action_id ?? undefined };
  }

  /** Every version of a name, newest first. */
  async versions(workspaceId: string, name: string): Promise<RoutineVersionRecord[]> {
    const rows = await this.q.db.selectFrom("routine_versions").selectAll().where("workspace_id", "=", workspaceId).where("name", "=", name).orderBy("version", "desc").execute();
    return rows.map((row) => ({ ...row, from_action_id: row.from_action_id ?? undefined }));
  }

  /** Marks the name deleted (its versions stay, for the actions that ran them); false when it was not live. */
  async delete(workspaceId: string, name: string, now: string): Promise<boolean> {
    const result = await this.q.db
      .updateTable("routines")
      .set({ deleted_at: now, updated_at: now })
      .where("workspace_id", "=", workspaceId)
      .where("name", "=", name)
      .where("deleted_at", "is", null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Keeps a routine action's secret params, sealed to the action. */
  async putSecretParams(actionId: string, params: Readonly<Record<string, unknown>>): Promise<void> {
    await this.q.db
      .insertInto("action_secret_params")
      .values({ action_id: actionId, params_sealed: this.sealer.seal(JSON.stringify(params), `action-params:${actionId}`) })
      .execute();
  }

  async secretParams(actionId: string): Promise<Record<string, unknown>> {
    const row = await this.q.db.selectFrom("action_secret_params").select("params_sealed").where("action_id", "=", actionId).executeTakeFirst();
    return row ? (JSON.parse(this.sealer.open(row.params_sealed, `action-params:${actionId}`)) as Record<string, unknown>) : {};
  }

  /** An ended action needs its secrets no more. */
  async dropSecretParams(actionId: string): Promise<void> {
    await this.q.db.deleteFrom("action_secret_params").where("action_id", "=", actionId).execute();
  }
}
