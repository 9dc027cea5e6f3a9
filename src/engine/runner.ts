import { LIVE_LINK_TTL_MS, MAX_REFUSED_ANSWERS } from "../domain/challenges.js";
import { ActionFailure } from "../domain/errors.js";
import { randomToken } from "../store/crypto.js";
import type { ActionRecord } from "../store/records.js";
import type { ActionExecutor, ChallengeRequest, ExecutionContext } from "./executor.js";
import { newId } from "./ids.js";
import type { Lifecycle } from "./lifecycle.js";
import type { Logger } from "./logger.js";

export interface RunnerOptions {
  lifecycle: Lifecycle;
  executor: ActionExecutor;
  logger: Logger;
  challengeTtlMs: number;
  /** Actions running (or waiting for input) at once, across accounts. */
  maxConcurrent: number;
}

interface ActiveRun {
  action: ActionRecord;
  controller: AbortController;
  challengeId: string | undefined;
  /** Set when the platform refused the last answer: the next challenge reopens the same one. */
  refusal: string | undefined;
  waiting: { resolve(answer: string | undefined): void; reject(reason: unknown): void } | undefined;
  done: Promise<void>;
}

/**
 * Claims queued actions (one per account, up to `maxConcurrent`), runs them through
 * the executor, and turns what the executor reports into status changes.
 */
export class Runner {
  readonly runnerId = newId("run");
  readonly #runs = new Map<string, ActiveRun>();
  #stopped = false;

  constructor(private readonly options: RunnerOptions) {}

  get activeCount(): number {
    return this.#runs.size;
  }

  /** Starts whatever may start now. */
  pump(): void {
    if (this.#stopped) return;
    const { store } = this.options.lifecycle;
    for (const action of store.actions.claimable()) {
      if (this.#runs.size >= this.options.maxConcurrent) break;
      const busy = [...this.#runs.values()].some((run) => run.action.account_id === action.account_id);
      if (!busy) this.#start(action);
    }
  }

  #start(action: ActionRecord): void {
    const { lifecycle } = this.options;
    if (!lifecycle.move(action.id, ["queued"], "running", { runner_id: this.runnerId })) return;
    const run: ActiveRun = { action, controller: new AbortController(), challengeId: undefined, refusal: undefined, waiting: undefined, done: Promise.resolve() };
    this.#runs.set(action.id, run);
    run.done = this.#execute(run).finally(() => {
      this.#runs.delete(action.id);
      this.pump();
    });
  }

  async #execute(run: ActiveRun): Promise<void> {
    const { lifecycle, logger } = this.options;
    const id = run.action.id;
    try {
      const result = await this.options.executor.execute(this.#context(run));
      if (run.controller.signal.aborted) throw run.controller.signal.reason;
      lifecycle.finish(id, { status: "succeeded", result });
    } catch (error) {
      if (error instanceof ActionFailure) {
        lifecycle.finish(id, { status: "failed", code: error.code, message: error.message });
      } else {
        // Canceled and expired actions have already ended; this only ends the others.
        if (!run.controller.signal.aborted) logger.error({ err: error, action_id: id }, "action failed in the browser");
        lifecycle.finish(id, { status: "failed", code: "browser_error", message: "The browser failed while running the action." });
      }
    }
  }

  #context(run: ActiveRun): ExecutionContext {
    const { lifecycle, logger } = this.options;
    const { store } = lifecycle;
    const accountId = run.action.account_id;
    const account = store.accounts.get(accountId);
    if (!account) throw new ActionFailure("not_found", "The account was deleted.");
    return {
      action: run.action,
      account,
      signal: run.controller.signal,
      clock: lifecycle.clock,
      logger: logger.child({ action_id: run.action.id, account_id: accountId }),
      secrets: () => ({ password: store.accounts.getSecret(accountId, "password"), totpSecret: store.accounts.getSecret(accountId, "totp_secret") }),
      challenge: (request) => this.#challenge(run, request),
      refuseAnswer: (message) => this.#refuse(run, message),
      claimTotpStep: (step) =>
        store.transaction(() => {
          const last = store.accounts.get(accountId)?.last_totp_step;
          if (last !== undefined && step <= last) return false;
          store.accounts.update(accountId, { last_totp_step: step }, lifecycle.now());
          return true;
        }),
      loadSession: () => store.accounts.getSecret(accountId, "session"),
      saveSession: (state) => {
        // A deleted account keeps no browser state.
        if (store.accounts.get(accountId)) store.accounts.setSecret(accountId, "session", state, lifecycle.now());
      },
      markConnected: (profile) => {
        if (store.accounts.get(accountId)) store.accounts.update(accountId, { status: "connected", ...(profile ? { profile } : {}) }, lifecycle.now());
      },
      markSignedOut: () => {
        if (store.accounts.get(accountId)) store.accounts.update(accountId, { status: "signed_out" }, lifecycle.now());
      },
    };
  }

  /** Pauses at needs_input: a new challenge, or the same one again after a refused answer. */
  #challenge(run: ActiveRun, request: ChallengeRequest): Promise<string | undefined> {
    const { lifecycle, challengeTtlMs } = this.options;
    const { store } = lifecycle;
    const signal = run.controller.signal;
    signal.throwIfAborted();
    store.transaction(() => {
      const now = lifecycle.clock.now();
      if (run.challengeId && run.refusal !== undefined) {
        store.challenges.update(run.challengeId, { state: "open", message: run.refusal }, now.toISOString());
      } else {
        if (run.challengeId) store.challenges.update(run.challengeId, { state: "resolved" }, now.toISOString());
        run.challengeId = newId("chl");
        store.challenges.insert(
          {
            id: run.challengeId,
            action_id: run.action.id,
            kind: request.kind,
            message: request.message,
            expires_at: new Date(now.getTime() + challengeTtlMs).toISOString(),
            link_expires_at: new Date(now.getTime() + LIVE_LINK_TTL_MS).toISOString(),
            refusals: 0,
            state: "open",
            created_at: now.toISOString(),
          },
          randomToken(32),
        );
      }
      if (!lifecycle.move(run.action.id, ["running"], "needs_input")) throw new ActionFailure("browser_error", "The action ended while pausing.");
    });
    run.refusal = undefined;
    return new Promise<string | undefined>((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      run.waiting = {
        resolve: (answer) => {
          signal.removeEventListener("abort", onAbort);
          resolve(answer);
        },
        reject,
      };
      request.resolvedOnPage?.(signal).then(
        () => this.#resumeFromPage(run),
        (error: unknown) => {
          if (run.waiting && !signal.aborted) {
            run.waiting = undefined;
            reject(error);
          }
        },
      );
    });
  }

  #resumeFromPage(run: ActiveRun): void {
    const waiting = run.waiting;
    if (!waiting || !run.challengeId) return;
    this.#resume(run, "resolved");
    waiting.resolve(undefined);
  }

  #resume(run: ActiveRun, state: "answered" | "resolved"): void {
    const { lifecycle } = this.options;
    run.waiting = undefined;
    lifecycle.store.challenges.update(run.challengeId!, { state }, lifecycle.now());
    lifecycle.move(run.action.id, ["needs_input"], "running");
  }

  /** Hands an answer to the run waiting for it; false when no run waits. */
  answer(actionId: string, answer: string): boolean {
    const run = this.#runs.get(actionId);
    const waiting = run?.waiting;
    if (!run || !waiting) return false;
    this.#resume(run, "answered");
    waiting.resolve(answer);
    return true;
  }

  #refuse(run: ActiveRun, message: string): void {
    const { store } = this.options.lifecycle;
    const challenge = run.challengeId ? store.challenges.get(run.challengeId) : undefined;
    if (!challenge) throw new Error("refuseAnswer called without a challenge");
    const refusals = challenge.refusals + 1;
    store.challenges.update(challenge.id, { refusals }, this.options.lifecycle.now());
    if (refusals >= MAX_REFUSED_ANSWERS) {
      throw new ActionFailure("login_failed", `The platform refused ${MAX_REFUSED_ANSWERS} answers in a row: ${message}`);
    }
    const left = MAX_REFUSED_ANSWERS - refusals;
    run.refusal = `Your answer was refused: ${message} ${left} ${left === 1 ? "attempt" : "attempts"} left.`;
  }

  /** Stops the run of an action that has ended (canceled, expired); its executor sees the abort. */
  abort(actionId: string, reason: Error): void {
    this.#runs.get(actionId)?.controller.abort(reason);
  }

  isRunning(actionId: string): boolean {
    return this.#runs.has(actionId);
  }

  /** Stops taking actions and ends the running ones as interrupted. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const runs = [...this.#runs.values()];
    for (const run of runs) {
      this.options.lifecycle.finish(run.action.id, { status: "failed", code: "browser_error", message: "Interrupted: the service stopped while the action was running." });
      run.controller.abort(new Error("service stopping"));
    }
    await Promise.allSettled(runs.map((run) => run.done));
  }
}
