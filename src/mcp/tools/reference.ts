import { z } from "zod";
import { requirePermission } from "../../engine/access.js";
import { PlatformJson, listOf } from "../../domain/public.js";
import { credits } from "../describe.js";
import { CreditsOutput } from "../schemas.js";
import { defineTool } from "../tool.js";


type JsonSchema = { type?: string; properties?: Record<string, JsonSchema>; required?: string[]; anyOf?: JsonSchema[]; oneOf?: JsonSchema[]; items?: JsonSchema };

/** A params JSON Schema as a compact signature a model reads at a glance: `{to, text}`, `{handle} | {url}`, `{steps: [{goto} | {click} …]}`. */
export function signature(schema: JsonSchema): string {
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return alternatives.map(signature).join(" | ");
  if (schema.type === "array") return `[${schema.items ? signature(schema.items) : ""}]`;
  if (schema.type !== "object") return schema.type ?? "value";
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties ?? {}).map(([name, inner]) => {
    const shape = inner.type === "object" || inner.type === "array" || inner.anyOf ? `: ${signature(inner)}` : "";
    return `${name}${required.has(name) ? "" : "?"}${shape}`;
  });
  return `{${fields.join(", ")}}`;
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
          const types = platform.actions.map((action) => `  - ${action.type} ${signature(action.params)} — ${credits(action.price)}: ${action.description}`);
          return [`${platform.name} — ${platform.title}: ${platform.description}`, ...types].join("\n");
        })
        .join("\n");
      return {
        structured: { data },
        text: `${text}\nCall run_action with account_id, type and params shaped as above (a ? marks an optional field, | separates alternatives).`,
      };
    },
  }),
  defineTool({
    name: "top_up_credits",
    title: "Top up credits",
    description:
      "Buys credits with an x402 payment (DESIGN §7): without payment_signature it returns the payment requirements; with one it settles and credits the workspace. Not implemented yet in this version: it says so, and changes nothing.",
    input: z.strictObject({
      credits: z.int().min(1).max(1_000_000).describe("How many credits to buy."),
      payment_signature: z.string().min(1).max(20_000).optional().describe("The x402 PAYMENT-SIGNATURE payload for the requirements returned before."),
    }),
    output: z.object({ balance: z.int().describe("The balance now (unchanged).") }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    handle(_args, { engine, principal }) {
      requirePermission(principal, "pay");
      const balance = engine.balance(principal);
      return {
        structured: { balance },
        text: `Not implemented: x402 top-ups are not built in this version, so nothing was paid or credited. Balance: ${credits(balance)} (new workspaces start with ACTION_SERVICE_FREE_CREDITS).`,
      };
    },
  }),
  defineTool({
    name: "send_feedback",
    title: "Send feedback",
    description:
      "Sends feedback to the service's operators, e.g. after unsupported or a browser_error that repeats (the error table's \"send feedback\"), optionally about one action. Not implemented yet in this version: it says so and stores nothing.",
    input: z.strictObject({
      message: z.string().trim().min(1).max(5_000).describe("What went wrong or what is missing, in your words."),
      action_id: z.string().min(1).max(200).optional().describe("The action it is about (`act_…`), if any."),
    }),
    output: z.object({ stored: z.boolean().describe("Whether the feedback was kept (false: not implemented yet).") }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    handle(args, { engine, principal }) {
      if (args.action_id) engine.getAction(principal, args.action_id);
      return { structured: { stored: false }, text: "Not implemented: feedback is not stored in this version; nothing was sent." };
    },
  }),
];
