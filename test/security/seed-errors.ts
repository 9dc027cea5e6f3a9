/**
 * The seed's request errors (§7) and their HTTP statuses, written out here rather than
 * imported, so a drift in src/domain/errors.ts shows up as a failure instead of agreeing with itself.
 */
export const SEED_REQUEST_ERRORS = {
  malformed_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  invalid_request: 422,
  too_many_requests: 429,
  // Not in the seed's table; DESIGN §7 (x402) answers a top-up without a good payment 402.
  payment_required: 402,
} as const;

export type SeedErrorCode = keyof typeof SEED_REQUEST_ERRORS;

export function isSeedErrorCode(code: unknown): code is SeedErrorCode {
  return typeof code === "string" && Object.hasOwn(SEED_REQUEST_ERRORS, code);
}

/**
 * Why a 4xx body is not the documented `{"error": {"code", "message", "details"?}}` with the
 * code the seed gives its status, or undefined when it is.
 */
export function errorEnvelopeProblem(status: number, body: unknown): string | undefined {
  if (typeof body !== "object" || body === null || !("error" in body)) return "the body has no `error` object";
  const error = (body as { error: unknown }).error;
  if (typeof error !== "object" || error === null) return "`error` is not an object";
  const { code, message, details, ...rest } = error as Record<string, unknown>;
  if (!isSeedErrorCode(code)) return `code ${JSON.stringify(code)} is not one of the seed's request errors`;
  if (SEED_REQUEST_ERRORS[code] !== status) return `code ${code} belongs to ${SEED_REQUEST_ERRORS[code]}, not ${status}`;
  if (typeof message !== "string" || message.length === 0) return "`message` is not a non-empty string";
  if (details !== undefined && (typeof details !== "object" || details === null)) return "`details` is not an object";
  if (Object.keys(rest).length > 0) return `unexpected fields in error: ${Object.keys(rest).join(", ")}`;
  return undefined;
}
