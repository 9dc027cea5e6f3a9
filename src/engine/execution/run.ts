import { LIVE_LINK_TTL_MS, MAX_REFUSED_ANSWERS } from "../../domain/challenges.js";
import type { ChallengeKind } from "../../domain/challenges.js";
import { ActionFailure, PlatformTimeout } from "../../domain/errors.js";
import { CHECK_TYPE } from "../../domain/health.js";
import { isTerminal } from "../../domain/status.js";
import { CommitUnknownError, isBusy, isOutcomeUnknown, retryWhileBusy, randomToken, type Store } from "../../store/index.js";
import type { ActionRecord, ChallengeRecord } from "../../store/records.js";
import type { ActionExecutor, ChallengeRequest } from "./executor.js";
import { newId } from "../ids.js";
import type { Guard, Lifecycle, Outcome } from "./lifecycle.js";
import type { Logger } from "../logger.js";
import { NO_LONGER_HELD, runContext } from "./run-context.js";

/** What a run needs from the runner that claimed it. */
export interface RunParts {
  lifecycle: Lifecycle;
  executor: ActionExecutor;
  logger: Logger;
  challengeTtlMs: number;
  /** Whether the runner `runnerId` still holds its lease. */
  leaseHolds: (runnerId: string) => Promise<boolean>;
  /** Now on the lease clock while `runnerId` is this process's lease and holds by its own count (self-fencing); else undefined. */
  leaseHere: (runnerId: string) => string | undefined;
  /** The run paused at needs_input: its slot is free for another account's action. */
  paused: () => void;
  inbox: RunInbox;
}

/** What a run asks of its account's inbox (DESIGN §15). */
export interface RunInbox {
  /** Whether the account's inbox may receive what a challenge of `kind` asks (a health check waits only for that). */
  mayAnswer(accountId: string, kind: ChallengeKind): Promise<boolean>;
  /**
   * The answer a message the inbox already holds gives a challenge just opened, the message used
   * and the challenge recorded as answered by it; undefined when none has one. Called inside the
   * transaction that opens the challenge.
   */
  answerAtHand(action: ActionRecord, challenge: ChallengeRecord): Promise<string | undefined>;
}

/** A run with no inbox: nothing arrives by itself. */
export const NO_INBOX: RunInbox = { mayAnswer: () => Promise.resolve(false), answerAtHand: () => Promise.resolve(undefined) };

/** A health check waits this long for the inbox, and never for a person (DESIGN §16). */
export const CHECK_INBOX_WAIT_MS = 60_000;

/**
 * One claimed action run through the executor: what the executor reports becomes status changes,
 * each written only while the run still holds the action (its fence); it pauses at needs_input
 * and takes the answer from the store.
 */
export class Run {
  /** The fencing token of this run: the runner that claimed it, and the action's lease number then. */
  readonly fence: Guard;
  readonly controller = new AbortController();
  challengeId: string | undefined;
  /** Set when the platform refused the last answer: the next challenge reopens the same one. */
  refusal: string | undefined;
  /** Set while paused at needs_input: the run holds its page but no run slot. */
  waiting: { resolve(answer: string | undefined): void; reject(reason: unknown): void } | undefined;
  /** The lease was lost: someone else recovers the action, this run writes nothing more. */
  forsaken = false;
  done: Promise<void> = Promise.resolve();

  constructor(
    readonly action: ActionRecord,
    private readonly parts: RunParts,
  ) {
    this.fence = fenceOf(action, parts.leaseHolds);
  }

  async execute(): Promise<void> {
    const { lifecycle, logger, executor } = this.parts;
    const id = this.action.id;
    let outcome: Outcome;
    try {
      const hooks = {
        signal: this.controller.signal,
        holds: () => this.holds(),
        commit: () => this.#commit(),
        challenge: (request: ChallengeRequest) => this.#challenge(request),
        refuseAnswer: (message: string) => this.#refuse(message),
      };
      const context = await runContext(lifecycle, logger, this.action, hooks);
      // Canceled (or handed back) while the run was being prepared: the driver is not started at all.
      this.controller.signal.throwIfAborted();
      const result = await executor.execute(context);
      this.controller.signal.throwIfAborted();
      outcome = { status: "succeeded", result };
    } catch (error) {
      outcome = await this.#failure(error);
    }
    if (this.forsaken) return;
    // Canceled and expired actions have already ended, recovered ones are someone else's: finish is
    // then a no-op. So is a finish that committed without its answer coming back (the connection was
    // lost while it committed): tried again, it finds the action ended, and says so to the waiters
    // here, who heard nothing of the commit.
    let unknown = false;
    const finished = await retryWhileBusy(() => lifecycle.finish(id, outcome, this.fence), {
      checksItsEffect: true,
      onBusy: (attempt, error) => {
        if (isOutcomeUnknown(error)) unknown = true;
        if (attempt === 1) logger.warn({ action_id: id }, "database busy or unreachable; the action ends once it answers");
      },
    });
    if (!finished && unknown) await retryWhileBusy(() => lifecycle.emit(id), { checksItsEffect: true });
  }

  /**
   * Whether the run still holds its action, read inside the caller's transaction with the action's
   * row locked until it ends: what the caller then writes (its session, the account's status, a
   * screenshot, an inbox message used) lands before any hand-over of the action, never after.
   */
  async holds(): Promise<boolean> {
    if (this.forsaken) return false;
    const action = await this.parts.lifecycle.store.actions.lockForWrite(this.action.id);
    return action !== undefined && !isTerminal(action.status) && (await this.fence(action));
  }

  /**
   * The commit point (`ExecutionContext.commit`): noted in one fenced statement, not a transaction
   * that locks the action to check its fence (`actions.markCommitted`). A run that no longer holds
   * its action fails as a fenced write does, before the step that cannot be undone. The statement
   * is tried again when its answer was lost (it sets what it would set again), each time judged
   * by the lease as it is then.
   */
  async #commit(): Promise<void> {
    const { lifecycle } = this.parts;
    const { runner_id: runnerId, lease } = this.action;
    const marked = await retryWhileBusy(
      async () => {
        const leaseNow = this.forsaken || runnerId === undefined ? undefined : this.parts.leaseHere(runnerId);
        return runnerId !== undefined && leaseNow !== undefined && (await lifecycle.store.actions.markCommitted(this.action.id, { runnerId, lease }, lifecycle.now(), leaseNow));
      },
      { checksItsEffect: true },
    );
    if (!marked) throw new ActionFailure("browser_error", NO_LONGER_HELD);
  }

  /** How a run that threw ends; a browser failure says whether the platform may already have done it. */
  async #failure(error: unknown): Promise<Outcome> {
    if (error instanceof ActionFailure && error.code !== "browser_error") {
      return {
        status: "failed",
        code: error.code,
        message: error.message,
        ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
        ...(error.details ? { details: error.details } : {}),
      };
    }
    if (!(error instanceof ActionFailure) && !this.controller.signal.aborted) {
      this.parts.logger.error({ err: error, action_id: this.action.id }, "action failed in the browser");
    }
    const first = error instanceof ActionFailure ? error.message : "The browser failed while running the action.";
    const message = `${first} ${await commitNote(this.parts.lifecycle.store, this.action.id)}`;
    return { status: "failed", code: "browser_error", message, ...(error instanceof PlatformTimeout ? { freeBeforeCommit: true } : {}) };
  }

  /**
   * Pauses at needs_input (a new challenge, or the same one again after a refused answer); the run
   * slot is free meanwhile. A new challenge that a message the inbox already holds answers is not
   * paused at: its answer is used at once (DESIGN §15).
   */
  async #challenge(request: ChallengeRequest): Promise<string | undefined> {
    const { lifecycle } = this.parts;
    const { store } = lifecycle;
    const signal = this.controller.signal;
    signal.throwIfAborted();
    const challengeTtlMs = this.action.type === CHECK_TYPE ? await this.#checkWaits(request) : this.parts.challengeTtlMs;
    const atHand = await retryWhileBusy(() =>
      store.transaction(async () => {
        const now = lifecycle.clock.now();
        if (!(await this.holds())) throw new ActionFailure("browser_error", "The action ended while pausing.");
        if (this.challengeId && this.refusal !== undefined) {
          await store.challenges.update(this.challengeId, { state: "open", message: this.refusal }, now.toISOString());
        } else {
          if (this.challengeId) await store.challenges.update(this.challengeId, { state: "resolved" }, now.toISOString());
          const challenge: ChallengeRecord = {
            id: newId("chl"),
            action_id: this.action.id,
            kind: request.kind,
            message: request.message,
            expires_at: new Date(now.getTime() + challengeTtlMs).toISOString(),
            link_expires_at: new Date(now.getTime() + LIVE_LINK_TTL_MS).toISOString(),
            refusals: 0,
            state: "open",
            created_at: now.toISOString(),
            updated_at: now.toISOString(),
          };
          await store.challenges.insert(challenge, randomToken(32));
          this.challengeId = challenge.id;
          const answer = await this.parts.inbox.answerAtHand(this.action, challenge);
          if (answer !== undefined) {
            await lifecycle.answered(this.action.id, "inbox");
            return answer;
          }
        }
        if (!(await lifecycle.move(this.action.id, ["running"], "needs_input", {}, this.fence))) throw new ActionFailure("browser_error", "The action ended while pausing.");
        return undefined;
      }),
    );
    this.refusal = undefined;
    signal.throwIfAborted();
    if (atHand !== undefined) return atHand;
    const answer = new Promise<string | undefined>((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiting = {
        resolve: (value) => {
          signal.removeEventListener("abort", onAbort);
          resolve(value);
        },
        reject,
      };
      request.resolvedOnPage?.(signal).then(
        () => this.#resumeFromPage(),
        (error: unknown) => {
          if (this.waiting && !signal.aborted) {
            this.waiting = undefined;
            reject(error);
          }
        },
      );
    });
    // Paused: the slot is free for another account's action.
    this.parts.paused();
    return answer;
  }

  /**
   * A health check never holds a page for a person: it waits a minute for a code the account's
   * inbox can receive, and otherwise ends, the account needing a person to sign in.
   */
  async #checkWaits(request: ChallengeRequest): Promise<number> {
    if (await this.parts.inbox.mayAnswer(this.action.account_id, request.kind)) return CHECK_INBOX_WAIT_MS;
    throw new ActionFailure("signed_out", `The session ended and signing in again needs a person: the platform asks for ${KIND_WORDS[request.kind]} ("${request.message}").`);
  }

  /** The page moved on by itself (device approved, captcha solved in the live browser). */
  #resumeFromPage(): void {
    const waiting = this.waiting;
    const challengeId = this.challengeId;
    if (!waiting || !challengeId) return;
    this.waiting = undefined;
    const { lifecycle } = this.parts;
    retryWhileBusy(() =>
      lifecycle.store.transaction(async () => {
        if (!(await lifecycle.move(this.action.id, ["needs_input"], "running", {}, this.fence))) throw new ActionFailure("browser_error", "The action ended while paused.");
        await lifecycle.store.challenges.update(challengeId, { state: "resolved" }, lifecycle.now());
      }),
    ).then(
      () => waiting.resolve(undefined),
      (error: unknown) => waiting.reject(error),
    );
  }

  /** Hands over an answer recorded in the store, when this run waits for it. True when it was delivered. */
  async deliver(): Promise<boolean> {
    const waiting = this.waiting;
    if (!waiting || !this.challengeId) return false;
    const { store } = this.parts.lifecycle;
    const challengeId = this.challengeId;
    let answer: string | undefined;
    try {
      await store.transaction(async () => {
        answer = (await this.holds()) ? await store.challenges.takeAnswer(challengeId) : undefined;
      });
    } catch (error) {
      // Only COMMIT's reply lost: the answer was read while the run held its action, and is this
      // run's whether its taking committed or not (it is typed once: only a waiting run is given
      // one). Otherwise (busy) the next wake-up tries again.
      if (!(error instanceof CommitUnknownError)) {
        if (!isBusy(error)) this.parts.logger.error({ err: error, action_id: this.action.id }, "could not take the answer");
        return false;
      }
    }
    if (answer === undefined || this.waiting !== waiting) return false;
    this.waiting = undefined;
    waiting.resolve(answer);
    return true;
  }

  /**
   * The platform refused the last answer. A person's or agent's counts toward the three refusals; a
   * code from the inbox does not (it may be a forged mail): the challenge goes back to a person and
   * the inbox answers it no more — it never types more than one wrong code per challenge.
   */
  async #refuse(message: string): Promise<void> {
    const { store } = this.parts.lifecycle;
    const challengeId = this.challengeId;
    if (!challengeId) throw new Error("refuseAnswer called without a challenge");
    const { refusals, byInbox } = await retryWhileBusy(() =>
      store.transaction(async () => {
        if (!(await this.holds())) throw new ActionFailure("browser_error", "The action moved on while the answer was checked.");
        const challenge = (await store.challenges.get(challengeId))!;
        if (challenge.answered_by === "inbox") {
          await store.challenges.update(challengeId, { inbox_closed_at: this.parts.lifecycle.now() }, this.parts.lifecycle.now());
          return { refusals: challenge.refusals, byInbox: true };
        }
        await store.challenges.update(challengeId, { refusals: challenge.refusals + 1 }, this.parts.lifecycle.now());
        return { refusals: challenge.refusals + 1, byInbox: false };
      }),
    );
    if (byInbox && this.action.type === CHECK_TYPE) {
      throw new ActionFailure("signed_out", `The session ended and the code the inbox received was refused: ${message} A person must sign in.`);
    }
    if (byInbox) {
      this.refusal = `The code the inbox received was refused: ${message} Answer with the code yourself: the inbox will not answer this challenge again (later messages are listed on the account).`;
      return;
    }
    if (refusals >= MAX_REFUSED_ANSWERS) {
      throw new ActionFailure("login_failed", `The platform refused ${MAX_REFUSED_ANSWERS} answers in a row: ${message}`);
    }
    const left = MAX_REFUSED_ANSWERS - refusals;
    this.refusal = `Your answer was refused: ${message} ${left} ${left === 1 ? "attempt" : "attempts"} left.`;
  }
}

const KIND_WORDS: Record<ChallengeKind, string> = {
  two_factor_code: "an authenticator code and no TOTP secret is stored",
  email_code: "a code by e-mail, and no inbox receives it",
  sms_code: "a code by text message, and no inbox receives it",
  device_approval: "an approval on another device",
  captcha: "a captcha",
  other: "more than the password",
};

/**
 * The fence of a run claimed as `claimed` (DESIGN §11): a write for the action is made only while
 * it is still this claim's (same runner, same lease number) and that runner's lease still holds.
 */
export function fenceOf(claimed: ActionRecord, leaseHolds: (runnerId: string) => Promise<boolean>): Guard {
  const runnerId = claimed.runner_id;
  const lease = claimed.lease;
  return async (action) => action.runner_id === runnerId && action.lease === lease && runnerId !== undefined && (await leaseHolds(runnerId));
}

/** Whether an interrupted action may already have been done on the platform, in the words the caller reads. */
export async function commitNote(store: Store, actionId: string): Promise<string> {
  let committed: string | undefined;
  try {
    committed = (await store.actions.get(actionId))?.committed_at;
  } catch {
    return "It may have stopped after the platform had done it: check the platform before retrying.";
  }
  return committed ? MAY_HAVE_BEEN_DONE : NOTHING_DONE;
}

export const MAY_HAVE_BEEN_DONE =
  "It stopped after the driver had begun the step that cannot be undone (e.g. clicking Post or Send): the platform may already have done it. Check the platform before you retry.";
export const NOTHING_DONE = "It stopped before anything was submitted to the platform: nothing was done there, so a retry is safe.";
