import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import { z } from "zod";
import { CreditsJson, ErrorJson, PlatformJson, TopUpJson, listOf } from "../../domain/public.js";
import { IdempotencyKey } from "../../engine/idempotency.js";
import { parse } from "../request-parts.js";
import { defineRoute, type RouteResponse } from "../route.js";
import { errorResponses } from "./common.js";

export const creditRoutes = [
  defineRoute({
    method: "get",
    path: "/v1/credits",
    tag: "credits",
    summary: "Credit balance",
    responses: { 200: { description: "The workspace's balance.", schema: CreditsJson }, ...errorResponses(401, 403, 429) },
    async handle({ principal, engine }) {
      return { status: 200, body: { balance: await engine.balance(principal) } };
    },
  }),
  defineRoute({
    method: "post",
    path: "/v1/credits/top-ups",
    tag: "credits",
    summary: "Top up credits with x402",
    description:
      "x402 v2 (DESIGN §7). Without `PAYMENT-SIGNATURE`: 402 with the payment requirements for exactly `credits` credits in `PAYMENT-REQUIRED` (base64 JSON). " +
      "With a signed payment for those requirements: verified and settled through the facilitator, then the credits are added → 200 with `PAYMENT-RESPONSE`. " +
      "A bad, replayed or unsettled payment credits nothing: 402 with the reason. Needs the `pay` permission (admin keys). Not configured: 503 naming the variables to set.",
    body: z.strictObject({ credits: z.int().min(1).describe("How many credits to buy (at most ACTION_SERVICE_X402_MAX_CREDITS).") }),
    headers: [
      { name: "PAYMENT-SIGNATURE", description: "The x402 payment payload (base64 JSON) signed for the requirements this route answered." },
      { name: "Idempotency-Key", description: "The same key, body and payment return the settled top-up again (`Idempotency-Replayed: true`)." },
    ],
    responses: {
      200: { description: "Settled and credited.", schema: TopUpJson },
      402: { description: "Payment required: the requirements are in PAYMENT-REQUIRED; `error.message` says why a payment sent was not credited.", schema: ErrorJson },
      503: { description: "Top-ups are not configured, or the facilitator did not answer (nothing credited).", schema: ErrorJson },
      ...errorResponses(400, 401, 403, 409, 422, 429),
    },
    async handle({ principal, body, headers, engine }): Promise<RouteResponse> {
      const key = headers.get("idempotency-key");
      const outcome = await engine.topUps.topUp(principal, body.credits, headers.get("payment-signature") ?? undefined, key === null ? undefined : parse(IdempotencyKey, key, "header"));
      if (outcome.kind === "payment_required") {
        const message = outcome.reason ?? `Pay ${outcome.paymentRequired.accepts[0]!.amount} of asset ${outcome.paymentRequired.accepts[0]!.asset} on ${outcome.paymentRequired.accepts[0]!.network} for ${body.credits} credits: sign the requirements in PAYMENT-REQUIRED and send them as PAYMENT-SIGNATURE.`;
        return {
          status: 402,
          headers: { "PAYMENT-REQUIRED": encodePaymentRequiredHeader(outcome.paymentRequired) },
          body: { error: { code: "payment_required", message, details: { payment_required: outcome.paymentRequired } } },
        };
      }
      const replayHeader: Record<string, string> = outcome.replayed ? { "Idempotency-Replayed": "true" } : {};
      return {
        status: 200,
        headers: { "PAYMENT-RESPONSE": encodePaymentResponseHeader(outcome.settlement), ...replayHeader },
        body: { balance: outcome.balance, credited: outcome.credited, transaction: outcome.transaction },
      };
    },
  }),
  defineRoute({
    method: "get",
    path: "/v1/platforms",
    tag: "platforms",
    summary: "The action reference",
    description: "Platforms, the action types each supports, the JSON Schema of each type's params, and its price in credits.",
    responses: { 200: { description: "Every platform.", schema: listOf(PlatformJson) }, ...errorResponses(401, 429) },
    handle({ engine }) {
      return { status: 200, body: { data: engine.platforms() } };
    },
  }),
];
