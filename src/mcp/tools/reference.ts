import { z } from "zod";
import { encodePaymentRequiredHeader } from "@x402/core/http";
import { PlatformJson, freeFormObject, listOf } from "../../domain/public.js";
import { FeedbackInput } from "../../events/feedback.js";
import { credits } from "../describe.js";
import { RoutineJson } from "../../domain/routines.js";
import { presentRoutine } from "../../engine/routines/index.js";
import { CreditsOutput, FeedbackOutput } from "../schemas.js";
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
      "Returns the workspace's credit balance. Each action type has a price (list_platforms); an action whose price is above the balance fails with insufficient_credits and costs nothing. Top up with top_up_credits (x402).",
    input: z.strictObject({}),
    output: CreditsOutput,
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async handle(_args, { engine, principal }) {
      const balance = await engine.balance(principal);
      return { structured: { balance }, text: `Balance: ${credits(balance)}. To add credits, call top_up_credits with the number of credits (paid with x402).` };
    },
  }),
  defineTool({
    name: "list_platforms",
    title: "The action reference",
    description:
      "Lists the platforms, the action types each supports, the JSON Schema of each type's params, its price in credits, and the workspace's routines for it (saved steps the service replays: prefer one when it does the task). Read it before run_action.",
    input: z.strictObject({}),
    output: listOf(PlatformJson.extend({ routines: z.array(RoutineJson).describe("The workspace's routines for this platform (run_action, type routine).") })),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async handle(_args, { engine, principal }) {
      const routines = (await engine.routines.list(principal)).map(presentRoutine);
      const data = engine.platforms().map((platform) => ({ ...platform, routines: routines.filter((routine) => routine.platform === platform.name) }));
      const text = data
        .map((platform) => {
          const types = platform.actions.map((action) => `  - ${action.type} ${signature(action.params)} — ${credits(action.price)}: ${action.description}`);
          const saved = platform.routines.map(
            (routine) => `  - routine "${routine.name}" (v${routine.version}) params ${signature(routine.params)}${routine.extracts.length > 0 ? ` → extracted {${routine.extracts.join(", ")}}` : ""}${routine.description ? `: ${routine.description}` : ""}`,
          );
          return [`${platform.name} — ${platform.title}: ${platform.description}`, ...types, ...saved].join("\n");
        })
        .join("\n");
      return {
        structured: { data },
        text:
          `${text}\nCall run_action with account_id, type and params shaped as above (a ? marks an optional field, | separates alternatives). ` +
          'A routine runs with type "routine" and params {"routine": name, "params": {…}}.',
      };
    },
  }),
  defineTool({
    name: "top_up_credits",
    title: "Top up credits",
    description:
      "Buys credits with an x402 v2 payment. Without payment_signature it returns the payment requirements for exactly that many credits (amount, asset, network, pay-to address; `payment_required` is the base64 PAYMENT-REQUIRED value an x402 client signs). " +
      "Sign them with an x402 client (e.g. @x402/fetch with your wallet) and call again with the same credits and payment_signature = the base64 PAYMENT-SIGNATURE value: the payment is verified and settled, then the credits are added. " +
      "A bad, replayed or unsettled payment adds nothing and says why. Needs an admin key (the pay permission).",
    input: z.strictObject({
      credits: z.int().min(1).max(1_000_000_000).describe("How many credits to buy (at most the service's ACTION_SERVICE_X402_MAX_CREDITS)."),
      payment_signature: z.string().min(1).max(20_000).optional().describe("The base64 x402 PAYMENT-SIGNATURE value signed for the requirements this tool returned."),
    }),
    output: z.object({
      balance: z.int().describe("Credits the workspace holds now."),
      credited: z.int().optional().describe("Credits this payment added (present once settled)."),
      transaction: z.string().optional().describe("The settlement's transaction hash (present once settled)."),
      requirements: freeFormObject().optional().describe("What to pay, as x402 v2 PaymentRequired (present until paid)."),
      payment_required: z.string().optional().describe("The same requirements as the base64 PAYMENT-REQUIRED value."),
      reason: z.string().optional().describe("Why the payment sent was not credited."),
    }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    async handle(args, { engine, principal }) {
      const outcome = await engine.topUps.topUp(principal, args.credits, args.payment_signature);
      if (outcome.kind === "settled") {
        return {
          structured: { balance: outcome.balance, credited: outcome.credited, transaction: outcome.transaction },
          text: `Paid and settled (transaction ${outcome.transaction}): ${credits(outcome.credited)} added. Balance: ${credits(outcome.balance)}.`,
        };
      }
      const balance = await engine.balance(principal);
      const header = encodePaymentRequiredHeader(outcome.paymentRequired);
      const wanted = outcome.paymentRequired.accepts[0]!;
      const ask =
        `To buy ${credits(args.credits)}: pay ${wanted.amount} (smallest unit) of asset ${wanted.asset} on ${wanted.network} to ${wanted.payTo} with the x402 "exact" scheme. ` +
        `Sign these requirements with an x402 client and call top_up_credits again with credits ${args.credits} and payment_signature = the PAYMENT-SIGNATURE value.\nPAYMENT-REQUIRED: ${header}`;
      return {
        structured: { balance, requirements: outcome.paymentRequired as unknown as Record<string, unknown>, payment_required: header, ...(outcome.reason ? { reason: outcome.reason } : {}) },
        text: outcome.reason ? `Not credited: ${outcome.reason} Balance: ${credits(balance)}.\n${ask}` : ask,
      };
    },
  }),
  defineTool({
    name: "send_feedback",
    title: "Send feedback",
    description:
      "Tells the people who run this service what went wrong or is missing: what the seed's \"send feedback\" means after an action failed with unsupported, or with browser_error more than once. " +
      "Give action_id when it is about an action: its platform, type, error and a screenshot of the page at the failure are kept with the message.",
    input: FeedbackInput,
    output: FeedbackOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async handle(args, { engine, principal }) {
      const feedback = await engine.feedback.send(principal, args);
      return { structured: feedback, text: `Feedback ${feedback.id} sent${feedback.action_id ? ` about ${feedback.action_id}` : ""}${feedback.has_screenshot ? " (with a screenshot of the page at the failure)" : ""}. Thank you.` };
    },
  }),
];
