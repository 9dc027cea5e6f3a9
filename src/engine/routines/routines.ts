import { z } from "zod";
import { AppError } from "../../domain/errors.js";
import type { Principal } from "../../domain/keys.js";
import {
  RoutineActionParams,
  extractionsOf,
  type PublicRoutine,
  routineParamsValidator,
  routineProblems,
  secretParams,
  type CreateRoutine,
  type RoutineParamsSchema,
  type RoutineStep,
  type RoutineVersion,
  type UpdateRoutine,
} from "../../domain/routines.js";
import { withholdSecrets, type SecretValues } from "../../domain/secret-params.js";
import type { RoutineRecord, RoutineVersionRecord } from "../../store/index.js";
import type { AccountRecord } from "../../store/records.js";
import { allows, requirePermission } from "../access/index.js";
import type { EngineCore } from "../core.js";

/** A routine as its store rows hold it, parsed. */
export interface Routine {
  name: string;
  platform: string;
  latest: RoutineVersion;
  created_at: string;
  updated_at: string;
  versions?: RoutineVersion[];
}

/** What a new version needs beyond its request: the action it was saved from. */
interface NewVersion extends CreateRoutine {
  from_action_id?: string | undefined;
}

export const ListRoutinesQuery = z.strictObject({
  platform: z.string().min(1).max(50).optional().describe("Only this platform's routines."),
});

function parsedVersion(row: RoutineVersionRecord): RoutineVersion {
  return {
    version: row.version,
    platform: row.platform,
    description: row.description,
    params: JSON.parse(row.params_schema) as RoutineParamsSchema,
    steps: JSON.parse(row.steps) as RoutineStep[],
    from_action_id: row.from_action_id,
    created_at: row.created_at,
  };
}

function notFound(name: string): AppError {
  return new AppError("not_found", `No routine named "${name}" in this workspace; list them with GET /v1/routines (MCP: list_routines).`, { routine: name });
}

/**
 * Routines are the workspace's, shared by every key: a key limited to some accounts may read and
 * run them (on its accounts) but not save, version or delete one (docs/decisions.md, issue 43 D),
 * as it may not add accounts. Checked before anything is looked up: the same 403 whatever the name.
 */
export function refuseLimited(principal: Principal): void {
  if (principal.accountIds) {
    throw new AppError("forbidden", "A key limited to some accounts may not save, change or delete routines: they are shared by the whole workspace.");
  }
}

/** Refuses steps that name a param the schema lacks, put a secret where it would show, or leave the platform. */
function checkSteps(input: Pick<CreateRoutine, "params" | "steps">): void {
  const problems = routineProblems(input.params, input.steps);
  if (problems.length > 0) {
    throw new AppError("invalid_request", `The routine is not valid: ${problems.map((problem) => `${problem.path}: ${problem.message}`).join("; ")}.`, {
      issues: problems.map((problem) => ({ path: `body.${problem.path}`, message: problem.message })),
    });
  }
}

/** Writes the next version of a name (the first when new); `create` refuses a live name. */
export async function saveVersion(core: EngineCore, principal: Principal, input: NewVersion, mode: "create" | "put" | "save"): Promise<Routine> {
  requirePermission(principal, "act");
  refuseLimited(principal);
  if (!core.platforms.some((platform) => platform.name === input.platform)) {
    throw new AppError("invalid_request", `Unknown platform "${input.platform}".`, { platforms: core.platforms.map((platform) => platform.name) });
  }
  checkSteps(input);
  const { store } = core;
  const saved = await store.transaction(async () => {
    const existing = await store.routines.get(principal.workspaceId, input.name);
    const live = existing && existing.deleted_at === undefined ? existing : undefined;
    if (mode === "create" && live) {
      throw new AppError("conflict", `A routine named "${input.name}" already exists (version ${live.latest}); save a new version with PUT /v1/routines/${input.name}.`, {
        routine: input.name,
        version: live.latest,
      });
    }
    if (mode === "put" && !live) throw notFound(input.name);
    if (live && live.platform !== input.platform) {
      throw new AppError("conflict", `The routine "${input.name}" runs on ${live.platform}, not ${input.platform}; choose another name.`, { routine: input.name, platform: live.platform });
    }
    const now = core.lifecycle.now();
    const row: RoutineVersionRecord = {
      workspace_id: principal.workspaceId,
      name: input.name,
      version: (existing?.latest ?? 0) + 1,
      platform: input.platform,
      description: input.description,
      params_schema: JSON.stringify(input.params),
      steps: JSON.stringify(input.steps),
      from_action_id: input.from_action_id,
      created_at: now,
    };
    await store.routines.addVersion(row, existing);
    return { row, created_at: live?.created_at ?? now };
  });
  return { name: input.name, platform: input.platform, latest: parsedVersion(saved.row), created_at: saved.created_at, updated_at: saved.row.created_at };
}

/** `PUT /v1/routines/{name}`: a new version of a live routine, on its own platform. */
export async function updateRoutine(core: EngineCore, principal: Principal, name: string, input: UpdateRoutine): Promise<Routine> {
  requirePermission(principal, "act");
  refuseLimited(principal);
  const current = await getRoutine(core, principal, name);
  return saveVersion(core, principal, { ...input, name, platform: current.platform, description: input.description ?? current.latest.description }, "put");
}

/** The live routine with its latest version (and every version when asked). */
export async function getRoutine(core: EngineCore, principal: Principal, name: string, withVersions = false): Promise<Routine> {
  requirePermission(principal, "read");
  const record = await core.store.routines.get(principal.workspaceId, name);
  if (!record || record.deleted_at !== undefined) throw notFound(name);
  const [routine] = await withSourcesSeen(core, principal, [await routineOf(core, record, withVersions)]);
  return routine!;
}

/**
 * The routines as the key may read them: a version's `from_action_id` only when the key may read
 * that action (a key limited to some accounts does not learn of another account's action, as it
 * is refused the action itself), else absent. One look at the actions for the whole page.
 */
async function withSourcesSeen(core: EngineCore, principal: Principal, routines: Routine[]): Promise<Routine[]> {
  if (principal.accountIds === undefined) return routines;
  const versionsOf = (routine: Routine): RoutineVersion[] => [routine.latest, ...(routine.versions ?? [])];
  const ids = [...new Set(routines.flatMap(versionsOf).flatMap((version) => (version.from_action_id ? [version.from_action_id] : [])))];
  const owners = await core.store.actions.accountsOf(ids);
  const seen = (version: RoutineVersion): RoutineVersion => {
    const owner = version.from_action_id === undefined ? undefined : owners.get(version.from_action_id);
    return owner && owner.workspace_id === principal.workspaceId && allows(principal, owner.account_id) ? version : { ...version, from_action_id: undefined };
  };
  return routines.map((routine) => ({ ...routine, latest: seen(routine.latest), ...(routine.versions ? { versions: routine.versions.map(seen) } : {}) }));
}

async function routineOf(core: EngineCore, record: RoutineRecord, withVersions: boolean): Promise<Routine> {
  if (withVersions) {
    const versions = (await core.store.routines.versions(record.workspace_id, record.name)).map(parsedVersion);
    return { name: record.name, platform: record.platform, latest: versions[0]!, created_at: record.created_at, updated_at: record.updated_at, versions };
  }
  const latest = (await core.store.routines.version(record.workspace_id, record.name, record.latest))!;
  return { name: record.name, platform: record.platform, latest: parsedVersion(latest), created_at: record.created_at, updated_at: record.updated_at };
}

export async function listRoutines(core: EngineCore, principal: Principal, platform?: string): Promise<Routine[]> {
  requirePermission(principal, "read");
  // Two statements for the whole list (the names, their latest versions), not one per routine.
  const [records, latest] = await Promise.all([core.store.routines.list(principal.workspaceId, platform), core.store.routines.latestVersions(principal.workspaceId, platform)]);
  const latestOf = new Map(latest.map((row) => [row.name, row]));
  const routines = records.flatMap((record) => {
    const version = latestOf.get(record.name);
    return version ? [{ name: record.name, platform: record.platform, latest: parsedVersion(version), created_at: record.created_at, updated_at: record.updated_at }] : [];
  });
  return withSourcesSeen(core, principal, routines);
}

/** Deletes the name; its versions stay, so the actions that ran them stay readable. */
export async function deleteRoutine(core: EngineCore, principal: Principal, name: string): Promise<void> {
  requirePermission(principal, "act");
  refuseLimited(principal);
  if (!(await core.store.routines.delete(principal.workspaceId, name, core.lifecycle.now()))) throw notFound(name);
}

/** A routine action's params at create: the version it will run, its params with secrets shown as "[secret]", and the secrets to seal (by path). */
export interface ResolvedRoutineParams {
  params: Record<string, unknown>;
  secrets: SecretValues;
}

/**
 * Checks a routine action's params at create (DESIGN §3: a bad shape is a 422 and creates nothing):
 * the routine is the workspace's, for the account's platform, and its params fit its schema. The
 * action records the version it runs: the latest, unless one was asked for.
 */
export async function resolveRoutineParams(core: EngineCore, principal: Principal, account: AccountRecord, given: Record<string, unknown>): Promise<ResolvedRoutineParams> {
  const input = RoutineActionParams.parse(given);
  const record = await core.store.routines.get(principal.workspaceId, input.routine);
  if (!record || record.deleted_at !== undefined || record.platform !== account.platform) {
    throw new AppError("invalid_request", `No routine named "${input.routine}" for the ${account.platform} platform in this workspace; list them with GET /v1/routines (MCP: list_routines).`, {
      issues: [{ path: "params.routine", message: "no such routine for the account's platform" }],
    });
  }
  const version = input.version ?? record.latest;
  const row = await core.store.routines.version(principal.workspaceId, input.routine, version);
  if (!row || row.platform !== account.platform) {
    throw new AppError("invalid_request", `The routine "${input.routine}" has no version ${version} (its latest is ${record.latest}).`, {
      issues: [{ path: "params.version", message: `no such version; the latest is ${record.latest}` }],
    });
  }
  const schema = JSON.parse(row.params_schema) as RoutineParamsSchema;
  const parsed = routineParamsValidator(schema).safeParse(input.params);
  if (!parsed.success) {
    throw new AppError("invalid_request", `The params do not fit the routine "${input.routine}" (version ${version}).`, {
      issues: parsed.error.issues.map((issue) => ({ path: ["params", "params", ...issue.path].join("."), message: issue.message })),
    });
  }
  return withholdSecrets(
    { routine: input.routine, params: parsed.data, version },
    secretParams(schema).map((name) => `params.${name}`),
  );
}

/** The routine's public JSON (DESIGN §14): its latest version, and its versions when read alone. */
export function presentRoutine(routine: Routine): PublicRoutine {
  const { latest } = routine;
  return {
    object: "routine",
    name: routine.name,
    platform: routine.platform,
    version: latest.version,
    description: latest.description,
    params: latest.params,
    steps: latest.steps as unknown as Record<string, unknown>[],
    extracts: extractionsOf(latest.steps),
    ...(latest.from_action_id ? { from_action_id: latest.from_action_id } : {}),
    created_at: routine.created_at,
    updated_at: routine.updated_at,
    ...(routine.versions
      ? {
          versions: routine.versions.map((one) => ({ version: one.version, description: one.description, ...(one.from_action_id ? { from_action_id: one.from_action_id } : {}), created_at: one.created_at })),
        }
      : {}),
  };
}
