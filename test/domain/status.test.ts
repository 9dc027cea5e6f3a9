import { describe, expect, it } from "vitest";
import { ACTION_STATUSES, TRANSITIONS, TransitionRefused, canTransition, isTerminal, transition } from "../../src/domain/status.js";
import { isCharged } from "../../src/domain/credits.js";

const ALLOWED = new Set([
  "queued>running",
  "queued>failed",
  "queued>canceled",
  "running>needs_input",
  "running>succeeded",
  "running>failed",
  "running>canceled",
  // Recovered after the process running it died, before its commit point.
  "running>queued",
  "needs_input>queued",
  "needs_input>running",
  "needs_input>failed",
  "needs_input>canceled",
]);

describe("status transitions", () => {
  for (const from of ACTION_STATUSES) {
    for (const to of ACTION_STATUSES) {
      const allowed = ALLOWED.has(`${from}>${to}`);
      it(`${from} → ${to} is ${allowed ? "allowed" : "refused"}`, () => {
        expect(canTransition(from, to)).toBe(allowed);
        if (allowed) expect(transition(from, to)).toBe(to);
        else expect(() => transition(from, to)).toThrow(TransitionRefused);
      });
    }
  }

  it("terminal statuses have no way out", () => {
    for (const status of ["succeeded", "failed", "canceled"] as const) {
      expect(isTerminal(status)).toBe(true);
      expect(TRANSITIONS[status]).toEqual([]);
    }
    expect(ACTION_STATUSES.filter(isTerminal)).toEqual(["succeeded", "failed", "canceled"]);
  });
});

describe("what costs credits", () => {
  it("charges successes and failures except the free ones", () => {
    expect(isCharged("succeeded")).toBe(true);
    expect(isCharged("canceled")).toBe(false);
    for (const code of ["browser_unavailable", "insufficient_credits", "invalid_input", "unsupported"] as const) expect(isCharged("failed", code)).toBe(false);
    for (const code of ["signed_out", "login_failed", "account_blocked", "rate_limited", "not_found", "rejected", "ui_changed", "challenge_timeout", "browser_error"] as const) {
      expect(isCharged("failed", code)).toBe(true);
    }
  });
});
