import { CreditsJson, PlatformJson, listOf } from "../../domain/public.js";
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
