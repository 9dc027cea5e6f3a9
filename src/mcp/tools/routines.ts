import { z } from "zod";
import { listOf } from "../../domain/public.js";
import { RoutineJson, RoutineName, type PublicRoutine } from "../../domain/routines.js";
import { ListRoutinesQuery, SaveRoutineInput, presentRoutine } from "../../engine/routines/index.js";
import { defineTool } from "../tool.js";
import { signature } from "./reference.js";

/** A routine in a line a model reads at a glance: how to run it and what it gives back. */
export function describeRoutine(routine: PublicRoutine): string {
  const result = routine.extracts.length > 0 ? ` → extracted {${routine.extracts.join(", ")}}` : "";
  return `${routine.name} (v${routine.version}, ${routine.platform}) params ${signature(routine.params)}${result}${routine.description ? ` — ${routine.description}` : ""}`;
}

const RUN_IT = 'Run one with run_action, type "routine", params {"routine": name, "params": {…}}.';

export const routineTools = [
  defineTool({
    name: "save_routine",
    title: "Save a routine",
    description:
      "Saves the steps of a browser_steps action that succeeded as a named routine the service replays without you: later, run_action with type routine runs them for any account of the platform, with new params, at a routine's price. " +
      'Name in params the values you typed that should change at each run ({"bio": "the text you typed"}; {"password": {"value": "…", "secret": true}} for a secret, which is never stored): every place the value appears becomes {{name}}. ' +
      "Use it once a task worked and will be done again. Saving a name that exists writes its next version (actions record the version they ran). " +
      "Refused, saying which step, when a step's target matched several elements or was a CSS selector with no role and name recorded: run the steps again with a role, label or text locator first.",
    input: SaveRoutineInput,
    output: RoutineJson,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async handle(args, { engine, principal }) {
      const routine = presentRoutine(await engine.routines.saveFromAction(principal, args));
      return { structured: routine, text: `Saved routine ${describeRoutine(routine)}.\n${RUN_IT}` };
    },
  }),
  defineTool({
    name: "list_routines",
    title: "List routines",
    description: `Lists the workspace's routines (saved steps the service replays), each with its params and what its result holds. Prefer a routine over browser_steps when one does the task: it runs without exploring. ${RUN_IT}`,
    input: ListRoutinesQuery,
    output: listOf(RoutineJson),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async handle(args, { engine, principal }) {
      const data = (await engine.routines.list(principal, args.platform)).map(presentRoutine);
      return { structured: { data }, text: data.length === 0 ? "No routines saved yet. Save one from a succeeded browser_steps action with save_routine." : `${data.map(describeRoutine).join("\n")}\n${RUN_IT}` };
    },
  }),
  defineTool({
    name: "delete_routine",
    title: "Delete a routine",
    description: "Deletes a routine: it can no longer run. Its versions are kept for the actions that ran them; saving the name again continues its version numbers.",
    // Any shape that names no routine is not_found, as an id is (DESIGN §5).
    input: z.strictObject({ name: z.string().min(1).max(200).describe(RoutineName.description ?? "") }),
    output: z.object({ deleted: z.literal(true), name: z.string() }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    async handle({ name }, { engine, principal }) {
      await engine.routines.delete(principal, name);
      return { structured: { deleted: true as const, name }, text: `Routine ${name} deleted.` };
    },
  }),
];
