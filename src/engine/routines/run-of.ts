import { extractionsOf, type RoutineRun, type RoutineStep } from "../../domain/routines.js";
import type { SecretValues } from "../../domain/secret-params.js";
import type { Store } from "../../store/index.js";

/**
 * The routine version an action recorded and its params (read when its run starts): `action`'s
 * params already whole again, `secrets` the values unsealed for them, which the run keeps out of
 * every record.
 */
export async function routineRunOf(store: Store, action: { id: string; workspace_id: string; params: Record<string, unknown> }, secrets: SecretValues): Promise<RoutineRun> {
  const { routine, version, params } = action.params as { routine: string; version: number; params: Record<string, unknown> };
  const row = await store.routines.version(action.workspace_id, routine, version);
  if (!row) throw new Error(`routine ${routine} version ${version} of action ${action.id} is gone`);
  const steps = JSON.parse(row.steps) as RoutineStep[];
  return {
    name: routine,
    version,
    steps,
    params,
    secretValues: Object.values(secrets).map((value) => String(value as string)),
    extracts: extractionsOf(steps),
  };
}
