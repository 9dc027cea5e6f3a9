import { z } from "zod";
import { PlatformJson, listOf } from "../../domain/public.js";
import { CreditsOutput } from "../schemas.js";
import { defineTool } from "../tool.js";

function credits(amount: number): string {
  return `${amount} ${amount === 1 ? "credit" : "credits"}`;
}

export const referenceTools = [
  defineTool({
    name: "get_credits",
    title: "Credit balance",
    description:
      "Returns the workspace's credit balance. Each action type has a price (list_platforms); an action whose price is above the balance fails with insufficient_credits and costs nothing.",
    input: z.strictObject({}),
    output: CreditsOutput,
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    handle(_args, { engine, principal }) {
      const balance = engine.balance(principal);
      return { structured: { balance }, text: `Balance: ${credits(balance)}.` };
    },
  }),
  defineTool({
    name: "list_platforms",
    title: "The action reference",
    description:
      "Lists the platforms, the action types each supports, the JSON Schema of each type's params, and its price in credits. Read it before run_action.",
    input: z.strictObject({}),
    output: listOf(PlatformJson),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    handle(_args, { engine }) {
      const data = engine.platforms();
      const text = data
        .map((platform) => {
          const types = platform.actions.map((action) => `  - ${action.type} (${credits(action.price)}): ${action.description}`);
          return [`${platform.name} — ${platform.title}: ${platform.description}`, ...types].join("\n");
        })
        .join("\n");
      return { structured: { data }, text: `${text}\nThe params schema of each type is in the structured result.` };
    },
  }),
];
