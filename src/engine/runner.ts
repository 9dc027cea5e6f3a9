import { LIVE_LINK_TTL_MS, MAX_REFUSED_ANSWERS } from "../domain/challenges.js";
import { ActionFailure } from "../domain/errors.js";
import { isBusy, retryWhileBusy } from "../store/busy.js";
import { randomToken } from "../store/crypto.js";
import type { ActionRecord } from "../store/records.js";
import type { ActionExecutor, ChallengeRequest } from "./executor.js";
import { newId } from "./ids.js";
import type { Lifecycle, Outcome } from "./lifecycle.js";
import type { Logger } from "./logger.js";
import { runContext } from "./run-context.js";

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

/** When the queue could not be read or claimed (a locked database), it is tried again this soon. */
const PUMP_RETRY_MS = 250;

/**
 * Claims queued actions (one per account, up to `maxConcurrent`), runs them through
 * the executor, and turns what the executor reports into status changes. Nothing it
 * starts may end the process: every write is retried while the database is locked,
 * and every promise it makes is handled.
 */
export class Runner {
  readonly runnerId = newId("run");
  readonly #runs = new Map<string, ActiveRun>();
  /** Accounts whose browser context a sign-in page holds: no action starts on them. */
  readonly #heldAccounts = new Set<string>();
  #stopped = false;
  #pumpRetry: NodeJS.Timeout | undefined;

  constructor(private readonly options: RunnerOptions) {}

  get activeCount(): number {
    return this.#runs.size;
  }

  /** Starts whatever may start now; a locked database only delays it. */
  pump(): void {
    if (this.#stopped) return;
    try {
      for (const action of this.options.lifecycle.store.actions.claimable()) {
        if (this.#runs.size >= this.options.maxConcurrent) break;
        if (this.#heldAccounts.has(action.account_id) || this.#accountRunning(action.account_id)) continue;
        this.#start(action);
      }
    } catch (error) {
      if (!isBusy(error)) this.options.logger.error({ err: error }, "could not start queued actions");
      this.#pumpRetry ??= setTimeout(() => {
        this.#pumpRetry = undefined;
        this.pump();
      }, PUMP_RETRY_MS);
    }
  }

  #accountRunning(accountId: string): boolean {
    for (const run of this.#runs.values()) if (run.action.account_id === accountId) return true;
    return false;
  }

  #start(action: ActionRecord): void {
    const { lifecycle, logger } = this.options;
    if (!lifecycle.move(action.id, ["queued"], "running", { runner_id: this.runnerId })) return;
    const run: ActiveRun = { action, controller: new AbortController(), challengeId: undefined, refusal: undefined, waiting: undefined, done: Promise.resolve() };
    this.#runs.set(action.id, run);
    run.done = this.#execute(run)
      .catch((error: unknown) => logger.error({ err: error, action_id: action.id }, "action run ended abnormally"))
      .finally(() => {
        this.#runs.delete(action.id);
        this.pump();
      });
  }

  async #execute(run: ActiveRun): Promise<void> {
    const { lifecycle, logger, executor } = this.options;
    const id = run.action.id;
    let outcome: Outcome;
    try {
      const hooks = { signal: run.controller.signal, challenge: (request: ChallengeRequest) => this.#challenge(run, request), refuseAnswer: (message: string) => this.#refuse(run, message) };
      const result = await executor.execute(runContext(lifecycle, logger, run.action, hooks));
      run.controller.signal.throwIfAborted();
      outcome = { status: "succeeded", result };
    } catch (error) {
      outcome = this.#failure(run, error);
    }
    // Canceled and expired actions have already ended: finish is then a no-op.
    await retryWhileBusy(() => lifecycle.finish(id, outcome), { onBusy: (attempt) => attempt === 1 && logger.warn({ action_id: id }, "database locked; the action ends once it is free") });
  }

  /** How a run that threw ends; a browser failure says whether the platform may already have done it. */
  #failure(run: ActiveRun, error: unknown): Outcome {
    if (error instanceof ActionFailure && error.code !== "browser_error") return { status: "failed", code: error.code, message: error.message };
    if (!(error instanceof ActionFailure) && !run.controller.signal.aborted) {
      this.options.logger.error({ err: error, action_id: run.action.id }, "action failed in the browser");
    }
    const first = error instanceof ActionFailure ? error.message : "The browser failed while running the action.";
    return { status: "failed", code: "browser_error", message: `${first} ${this.#commitNote(run.action.id)}` };
  }

  #commitNote(actionId: string): string {
    let committed: string | undefined;
    try {
      committed = this.options.lifecycle.store.actions.get(actionId)?.committed_at;
    } catch {
      return "It may have stopped after the platform had done it: check the platform before retrying.";
    }
    return committed ? MAY_HAVE_BEEN_DONE : NOTHING_DONE;
  }

  /** Pauses at needs_input: a new challenge, or the same one again after a refused answer. */
  async #challenge(run: ActiveRun, request: ChallengeRequest): Promise<string | undefined> {
    const { lifecycle, challengeTtlMs } = this.options;
    const { store } = lifecycle;
    const signal = run.controller.signal;
    signal.throwIfAborted();
    await retryWhileBusy(() =>
      store.transaction(() => {
        const now = lifecycle.clock.now();
        if (run.challengeId && run.refusal !== undefined) {
          store.challenges.update(run.challengeId, { state: "open", message: run.refusal }, now.toISOString());
        } else {
          if (run.challengeId) store.challenges.update(run.challengeId, { state: "resolved" }, now.toISOString());
          const challengeId = newId("chl");
          store.challenges.insert(
            {
              id: challengeId,
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
          run.challengeId = challengeId;
        }
        if (!lifecycle.move(run.action.id, ["running"], "needs_input")) throw new ActionFailure("browser_error", "The action ended while pausing.");
      }),
    );
    run.refusal = undefined;
    signal.throwIfAborted();
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

  /** The page moved on by itself (device approved, captcha solved in the live browser). */
  #resumeFromPage(run: ActiveRun): void {
    const waiting = run.waiting;
    if (!waiting || !run.challengeId) return;
    run.waiting = undefined;
    retryWhileBusy(() => this.#resume(run, "resolved")).then(
      () => waiting.resolve(undefined),
      (error: unknown) => waiting.reject(error),
    );
  }

  /** The challenge is answered or resolved and the action runs again, in one transaction. */
  #resume(run: ActiveRun, state: "answered" | "resolved"): void {
    const { lifecycle } = this.options;
    lifecycle.store.transaction(() => {
      lifecycle.store.challenges.update(run.challengeId!, { state }, lifecycle.now());
      lifecycle.move(run.action.id, ["needs_input"], "running");
    });
  }

  /** Hands an answer to the run waiting for it; false when no run waits. A locked database throws (nothing changed). */
  answer(actionId: string, answer: string): boolean {
    const run = this.#runs.get(actionId);
    const waiting = run?.waiting;
    if (!run || !waiting) return false;
    this.#resume(run, "answered");
    run.waiting = undefined;
    waiting.resolve(answer);
    return true;
  }

  async #refuse(run: ActiveRun, message: string): Promise<void> {
    const { store } = this.options.lifecycle;
    const challengeId = run.challengeId;
    if (!challengeId) throw new Error("refuseAnswer called without a challenge");
    const refusals = await retryWhileBusy(() =>
      store.transaction(() => {
        const count = store.challenges.get(challengeId)!.refusals + 1;
        store.challenges.update(challengeId, { refusals: count }, this.options.lifecycle.now());
        return count;
      }),
    );
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

  /**
   * A sign-in page wants the account's browser context to itself (DESIGN §3: one writer per
   * context). True, and no action starts on the account until `releaseAccount`, when none
   * runs or waits now; false otherwise.
   */
  holdAccount(accountId: string): boolean {
    if (this.#heldAccounts.has(accountId) || this.#accountRunning(accountId)) return false;
    if (this.options.lifecycle.store.actions.hasActive(accountId)) return false;
    this.#heldAccounts.add(accountId);
    return true;
  }

  releaseAccount(accountId: string): void {
    if (this.#heldAccounts.delete(accountId)) this.pump();
  }

  /** Stops taking actions and ends the running ones as interrupted. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#pumpRetry);
    const runs = [...this.#runs.values()];
    await Promise.all(
      runs.map(async (run) => {
        const message = `Interrupted: the service stopped while the action was running. ${this.#commitNote(run.action.id)}`;
        await retryWhileBusy(() => this.options.lifecycle.finish(run.action.id, { status: "failed", code: "browser_error", message }), { giveUpAfterMs: 5_000 }).catch(
          (error: unknown) => this.options.logger.error({ err: error, action_id: run.action.id }, "could not record the interrupted action"),
        );
        run.controller.abort(new Error("service stopping"));
      }),
    );
    await Promise.allSettled(runs.map((run) => run.done));
  }
}

const MAY_HAVE_BEEN_DONE =
  "It stopped after the driver had begun the step that cannot be undone (e.g. clicking Post or Send): the platform may already have done it. Check the platform before you retry.";
const NOTHING_DONE = "It stopped before anything was submitted to the platform: nothing was done there, so a retry is safe.";
