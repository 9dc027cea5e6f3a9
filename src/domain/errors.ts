/** Action error codes with the seed's meaning and recommended client response (seed §7). */
export const ACTION_ERRORS = {
  signed_out: {
    message: "The account is signed out and its stored credentials could not sign it in again.",
    advice: "Connect again, or send the owner a sign-in link.",
  },
  login_failed: {
    message: "The platform refused the username, password or code.",
    advice: "Fix credentials with PATCH /v1/accounts/{id}, then connect again.",
  },
  account_blocked: {
    message: "The platform shows a checkpoint or suspension for this account.",
    advice: "Open a sign-in link and clear the checkpoint in the live browser.",
  },
  rate_limited: {
    message: "The platform asked the account to slow down.",
    advice: "Space out actions on this account; try later.",
  },
  not_found: {
    message: "The post, person or conversation does not exist or is not visible to the account.",
    advice: "Check the URL, handle or id.",
  },
  unsupported: {
    message: "The platform has no such action.",
    advice: "Use browser steps, or send feedback.",
  },
  invalid_input: {
    message: "A parameter is missing or has the wrong shape.",
    advice: "Check the parameters in the action reference.",
  },
  rejected: {
    message: "The platform refused the action.",
    advice: "Read the message, change the request, retry.",
  },
  ui_changed: {
    message: "The page did not look as the driver expects.",
    advice: "Retry later.",
  },
  challenge_timeout: {
    message: "The sign-in challenge was not answered before it expired.",
    advice: "Run the action again and answer in time.",
  },
  browser_unavailable: {
    message: "No browser could be started; nothing is charged.",
    advice: "Retry with the same Idempotency-Key.",
  },
  browser_error: {
    message: "The browser failed while running the action.",
    advice: "Retry; if it repeats, send feedback.",
  },
  insufficient_credits: {
    message: "The balance is too low for this action.",
    advice: "Top up with x402 or in the web app.",
  },
} as const;

export type ActionErrorCode = keyof typeof ACTION_ERRORS;
export const ACTION_ERROR_CODES = Object.keys(ACTION_ERRORS) as ActionErrorCode[];

/** The error object of a failed action. */
export interface ActionError {
  code: ActionErrorCode;
  message: string;
  /** What an agent needs to act on it, e.g. a step that could not be done (`StepFailureDetails`). */
  details?: Record<string, unknown>;
}

/**
 * A step that could not be done (DESIGN §6): its index in the steps given (from 0), the page's path,
 * and the page's accessibility snapshot as it was, bounded and with typed values and secrets redacted.
 */
export interface StepFailureDetails extends Record<string, unknown> {
  step: number;
  path: string;
  snapshot: string;
}

/**
 * Thrown by drivers and the engine to end an action as `failed` with a seed code.
 * The code is chosen from what the page shows, never from an exception's text.
 */
export class ActionFailure extends Error {
  constructor(
    readonly code: ActionErrorCode,
    message: string = ACTION_ERRORS[code].message,
    /** With `rate_limited`: the wait the platform named (e.g. its Retry-After), for the account's cool-down (DESIGN §16). */
    readonly retryAfterSeconds?: number,
    /** Shown in the error object beside code and message (e.g. a failed step's `StepFailureDetails`). */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = "ActionFailure";
  }
}

/**
 * The platform did not answer within the page timeout (DESIGN §3, "slow is not broken"): its page was
 * still on its way, so nothing can be said of how it looks (never `ui_changed`). `browser_error`, the
 * seed's code for a run the browser could not finish ("retry; if it repeats, send feedback"); free
 * when it happened before the commit point.
 */
export class PlatformTimeout extends ActionFailure {
  constructor(
    readonly seconds: number,
    platformTitle: string,
    where: string,
  ) {
    super("browser_error", `The ${platformTitle} platform did not answer within ${seconds} s: ${where} had not loaded.`);
    this.name = "PlatformTimeout";
  }
}

/** Request-level errors (seed §7 "Request errors") and their HTTP statuses. */
export const REQUEST_ERRORS = {
  malformed_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  /** x402 (DESIGN §7): a top-up without a payment, or whose payment credits nothing; the requirements are in PAYMENT-REQUIRED. */
  payment_required: 402,
  conflict: 409,
  invalid_request: 422,
  too_many_requests: 429,
  /** Not the client's doing: the database is locked by another process for now. Nothing changed; retry. */
  service_unavailable: 503,
} as const;

export type RequestErrorCode = keyof typeof REQUEST_ERRORS;

/**
 * A request-level error: creates nothing, costs nothing. Each surface renders it
 * once (REST as `{error}` with the HTTP status, MCP as an `isError` result).
 */
export class AppError extends Error {
  constructor(
    readonly code: RequestErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = "AppError";
  }

  get httpStatus(): number {
    return REQUEST_ERRORS[this.code];
  }

  toJSON(): { error: { code: RequestErrorCode; message: string; details?: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }
}
