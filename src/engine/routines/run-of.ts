import { extractionsOf, type RoutineRun, type RoutineStep } from "../../domain/routines.js";
import type { Store } from "../../store/index.js";

/** The routine version an action recorded, and its params whole again (read when its run starts). */
export async function routineRunOf(store: Store, action: { id: string; workspace_id: string; params: Record<string, unknown> }): Promise<RoutineRun> {
  const { routine, version, params } = action.params as { routine: string; version: number; params: Record<string, unknown> };
  const row = await store.routines.version(action.workspace_id, routine, version);
  if (!row) throw new Error(`routine ${routine} version ${version} of action ${action.id} is gone`);
  const secrets = await store.routines.secretParams(action.id);
  const steps = JSON.parse(row.steps) as RoutineStep[];
  return {
    name: routine,
    version,
    steps,
    params: { ...params, ...secrets },
    secretValues: Object.values(secrets).map((value) => String(value as string)),
    extracts: extractionsOf(steps),
  };
}
