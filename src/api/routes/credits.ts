import { CreditsJson, PlatformJson, listOf } from "../../domain/public.js";
import { requirePermission } from "../../engine/access.js";
import { defineRoute } from "../route.js";
import { errorResponses } from "./common.js";

export const creditRoutes = [
  defineRoute({
    method: "get",
    path: "/v1/credits",
    tag: "credits",
    summary: "Credit balance",
    responses: { 200: { description: "The workspace's balance.", schema: CreditsJson }, ...errorResponses(401, 403, 429) },
    handle({ principal, engine }) {
      return { status: 200, body: { balance: engine.balance(principal) } };
    },
  }),
  defineRoute({
    method: "post",
    path: "/v1/credits/top-ups",
    tag: "credits",
    summary: "Top up credits with x402 (not implemented)",
    description: "Not implemented yet: answers 501. New workspaces start with ACTION_SERVICE_FREE_CREDITS.",
    responses: { 501: { description: "Not implemented." }, ...errorResponses(401, 403, 429) },
    handle({ principal }) {
      requirePermission(principal, "pay");
      return {
        status: 501,
        body: { error: { code: "not_implemented", message: "x402 top-ups are not implemented yet. New workspaces start with ACTION_SERVICE_FREE_CREDITS credits." } },
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
