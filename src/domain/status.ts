/** Action statuses (seed §3). */
export const ACTION_STATUSES = ["queued", "running", "needs_input", "succeeded", "failed", "canceled"] as const;
export type ActionStatus = (typeof ACTION_STATUSES)[number];

export const TERMINAL_STATUSES: ReadonlySet<ActionStatus> = new Set(["succeeded", "failed", "canceled"]);

/** Every allowed move; anything not listed is refused by `transition()`. */
export const TRANSITIONS: Readonly<Record<ActionStatus, readonly ActionStatus[]>> = {
  // queued → failed covers failures decided before anything runs (insufficient credits,
  // unsupported type, no browser).
  queued: ["running", "failed", "canceled"],
  // → queued: recovered after the process running it died, before its commit point (DESIGN §3).
  running: ["needs_input", "succeeded", "failed", "canceled", "queued"],
  needs_input: ["running", "failed", "canceled", "queued"],
  succeeded: [],
  failed: [],
  canceled: [],
};

export function isTerminal(status: ActionStatus): boolean {
  return TERMINAL_STATUSES.has(status);
}

export function canTransition(from: ActionStatus, to: ActionStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Thrown when a status change is not in `TRANSITIONS`. */
export class TransitionRefused extends Error {
  constructor(
    readonly from: ActionStatus,
    readonly to: ActionStatus,
  ) {
    super(`An action cannot go from ${from} to ${to}.`);
    this.name = "TransitionRefused";
  }
}

/** Returns `to` when the move is allowed, throws `TransitionRefused` otherwise. */
export function transition(from: ActionStatus, to: ActionStatus): ActionStatus {
  if (!canTransition(from, to)) throw new TransitionRefused(from, to);
  return to;
}
