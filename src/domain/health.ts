import type { ActionErrorCode } from "./errors.js";

/**
 * Health checks (DESIGN §16) run as the engine's own actions of this type: claimed, fenced and
 * recovered like any action, never listed, charged or sent as an `action.updated` event.
 */
export const CHECK_TYPE = "check";

/**
 * What a check found: still `connected`; `signed_in_again` without a person (password with a
 * stored TOTP secret, or a code the inbox received); `needs_auth` (a person must sign in);
 * `blocked` (a checkpoint); `failed` (the platform or the browser did not answer: tried again later).
 */
export type CheckOutcome = "connected" | "signed_in_again" | "needs_auth" | "blocked" | "failed";
export const CHECK_OUTCOMES: readonly CheckOutcome[] = ["connected", "signed_in_again", "needs_auth", "blocked", "failed"];

/** The outcome of an ended check action: its result's `outcome` when it succeeded, else from its error code. */
export function checkOutcome(check: { status: string; error_code?: ActionErrorCode | undefined; result?: Record<string, unknown> | undefined }): CheckOutcome | undefined {
  if (check.status === "succeeded") return check.result?.outcome === "signed_in_again" ? "signed_in_again" : "connected";
  if (check.status !== "failed") return undefined;
  if (check.error_code === "signed_out" || check.error_code === "login_failed" || check.error_code === "challenge_timeout") return "needs_auth";
  if (check.error_code === "account_blocked") return "blocked";
  return "failed";
}

/** A check someone asked for (`POST /v1/accounts/{id}/check`, MCP `check_account`): its end is an `account.updated` event even when nothing changed. */
export function isRequestedCheck(action: { type: string; params: Record<string, unknown> }): boolean {
  return action.type === CHECK_TYPE && action.params.requested === true;
}
