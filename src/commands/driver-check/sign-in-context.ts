import { setTimeout as sleep } from "node:timers/promises";
import type { Locator, Page } from "playwright";
import { isTimeout, judgeTimeout, whenVisible, type PageRule } from "../../browser/settle.js";
import { MAX_REFUSED_ANSWERS } from "../../domain/challenges.js";
import { ActionFailure } from "../../domain/errors.js";
import { systemClock } from "../../engine/clock.js";
import { silentLogger } from "../../engine/logger.js";
import type { DriverContext } from "../../platforms/driver.js";
import type { ChallengePage } from "../../platforms/sign-in.js";
import type { Terminal } from "./terminal.js";

export interface SignInContextOptions {
  page: Page;
  baseUrl: string;
  credentials: { username: string; password: string };
  terminal: Terminal;
  signal: AbortSignal;
  challengeTimeoutMs: number;
  rule: PageRule;
  /** The challenge page the last wait found, if any. */
  challengeNow(): ChallengePage | undefined;
  settle<K extends string>(states: Record<K, Locator>, timeoutMs: number | undefined): Promise<K>;
  open(pathOrUrl: string): Promise<void>;
}

/**
 * What the shared sign-in loop sees when the check runs it: the typed password, no stored TOTP
 * secret (a two-factor page asks at the terminal like any other), every challenge answered at the
 * terminal or met on another device, and nothing ever committed (the check runs no action).
 */
export function signInContext(options: SignInContextOptions): DriverContext {
  const { page, baseUrl, credentials, terminal, signal, challengeTimeoutMs, rule } = options;
  const minutes = Math.round(challengeTimeoutMs / 60_000);
  let refused = 0;
  return {
    page,
    baseUrl,
    type: "connect",
    username: credentials.username,
    params: {},
    hadSession: false,
    signal,
    clock: systemClock,
    logger: silentLogger,
    secrets: () => ({ password: credentials.password, totpSecret: undefined }),
    challenge: async ({ kind, message, resolvedOnPage }) => {
      const declared = options.challengeNow();
      terminal.say(`The platform asks (${kind}): ${message}`);
      if (!declared || declared.field || declared.link) {
        const answer = await terminal.line(declared?.link ? "Paste the sign-in link from the mail: " : "Answer: ");
        if (answer === undefined) throw new ActionFailure("challenge_timeout", "No answer was typed (stdin ended).");
        return answer.trim();
      }
      terminal.say(`Meet it where the platform says (another device, a browser): waiting up to ${minutes} min…`);
      const waited = AbortSignal.any([signal, AbortSignal.timeout(challengeTimeoutMs)]);
      await (resolvedOnPage?.(waited) ?? sleep(challengeTimeoutMs, undefined, { signal: waited })).catch(() => {
        throw new ActionFailure("challenge_timeout", `The ${kind} challenge was not met within ${minutes} min.`);
      });
      return undefined;
    },
    refuseAnswer: async (message) => {
      refused++;
      if (refused >= MAX_REFUSED_ANSWERS) throw new ActionFailure("login_failed", `${MAX_REFUSED_ANSWERS} answers were refused: ${message}`);
      terminal.say(`Refused: ${message}`);
    },
    claimTotpStep: async () => true,
    commit: async () => undefined,
    markConnected: async () => undefined,
    settle: (states, settleOptions) => options.settle(states, settleOptions?.timeoutMs),
    judgeTimeout: (error) => (isTimeout(error) ? judgeTimeout(page, rule) : undefined),
    whenVisible: (locator, waitSignal) => whenVisible(page, locator, waitSignal),
    open: (pathOrUrl) => options.open(pathOrUrl),
  };
}
