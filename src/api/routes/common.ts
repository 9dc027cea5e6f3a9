import { ErrorJson } from "../../domain/public.js";

const MEANING: Record<number, string> = {
  400: "Malformed request, such as bad JSON or a body over the size limit.",
  401: "API key missing or not valid.",
  402: "Payment required (x402): the requirements are in PAYMENT-REQUIRED.",
  403: "The key may not do this, or not on this account.",
  404: "No such account or action for this key.",
  409: "The request conflicts with the current state.",
  422: "A field has the wrong value or shape.",
  429: "Too many requests; wait for Retry-After seconds.",
  503: "Not available now: the reason is in the message; nothing was changed.",
};

/** The documented request errors of a route. */
export function errorResponses(...statuses: number[]): Record<number, { description: string; schema: typeof ErrorJson }> {
  return Object.fromEntries(statuses.map((status) => [status, { description: MEANING[status]!, schema: ErrorJson }]));
}
