import type { ActionErrorCode } from "./errors.js";
import type { ActionStatus } from "./status.js";

/** Failures that cost nothing (DESIGN §7); every other finished action is charged. */
const FREE_FAILURES: ReadonlySet<ActionErrorCode> = new Set([
  "browser_unavailable",
  "insufficient_credits",
  "invalid_input",
  "unsupported",
]);

/**
 * Whether a finished action's hold is captured (true) or released (false). A `connect` the
 * platform blocks is free too: its answer is a sign-in link, not a charged failure (DESIGN §6).
 */
export function isCharged(status: ActionStatus, errorCode?: ActionErrorCode, type?: string): boolean {
  if (status === "canceled") return false;
  if (status === "failed") return errorCode === undefined || !(FREE_FAILURES.has(errorCode) || (type === "connect" && errorCode === "account_blocked"));
  return status === "succeeded";
}

/** Ledger entry kinds: grants and top-ups add, holds take, releases give a hold back. */
export const LEDGER_KINDS = ["grant", "top_up", "hold", "release"] as const;
export type LedgerKind = (typeof LEDGER_KINDS)[number];
