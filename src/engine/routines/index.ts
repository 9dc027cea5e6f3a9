/** Routines (DESIGN §14): saved, versioned steps an agent taught, run as the routine action type. */
import type { Principal } from "../../domain/keys.js";
import type { CreateRoutine, UpdateRoutine } from "../../domain/routines.js";
import type { ActionRecord } from "../../store/records.js";
import { requirePermission } from "../access/index.js";
import type { EngineCore } from "../core.js";
import { saveRoutineFromAction, type SaveRoutine } from "./from-action.js";
import { deleteRoutine, getRoutine, listRoutines, saveVersion, updateRoutine, type Routine } from "./routines.js";

export { ListRoutinesQuery, presentRoutine, type Routine } from "./routines.js";
export { SaveRoutineInput, type SaveRoutine } from "./from-action.js";

/** Routines behind REST, MCP and the web app. */
export class Routines {
  constructor(private readonly core: EngineCore) {}

  create(principal: Principal, input: CreateRoutine): Promise<Routine> {
    return saveVersion(this.core, principal, input, "create");
  }
  update(principal: Principal, name: string, input: UpdateRoutine): Promise<Routine> {
    return updateRoutine(this.core, principal, name, input);
  }
  get(principal: Principal, name: string): Promise<Routine> {
    return getRoutine(this.core, principal, name, true);
  }
  list(principal: Principal, platform?: string): Promise<Routine[]> {
    return listRoutines(this.core, principal, platform);
  }
  delete(principal: Principal, name: string): Promise<void> {
    return deleteRoutine(this.core, principal, name);
  }
  /** The newest actions that ran the routine (of the accounts the key may see), newest first. */
  async runs(principal: Principal, name: string, limit: number): Promise<ActionRecord[]> {
    requirePermission(principal, "read");
    return this.core.store.actions.list({ workspaceId: principal.workspaceId, accountIds: principal.accountIds, routine: name, limit });
  }
  /** The newest action that ran each of these routines (of the accounts the key may see), by name: one statement for a page. */
  async lastRuns(principal: Principal, names: readonly string[]): Promise<Map<string, ActionRecord>> {
    requirePermission(principal, "read");
    return this.core.store.actions.lastRoutineRuns({ workspaceId: principal.workspaceId, accountIds: principal.accountIds, names });
  }
  saveFromAction(principal: Principal, input: SaveRoutine): Promise<Routine> {
    return saveRoutineFromAction(this.core, principal, input);
  }
}
