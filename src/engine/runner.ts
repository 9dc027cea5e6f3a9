import { LIVE_LINK_TTL_MS, MAX_REFUSED_ANSWERS } from "../domain/challenges.js";
import { ActionFailure, PlatformTimeout } from "../domain/errors.js";
import { isTerminal } from "../domain/status.js";
import { isBusy, retryWhileBusy, randomToken } from "../store/index.js";
import type { ActionRecord } from "../store/records.js";
import { systemClock, type Clock } from "./clock.js";
import type { ActionExecutor, ChallengeRequest } from "./executor.js";
import { newId } from "./ids.js";
import { Lease } from "./lease.js";
import type { Guard, Lifecycle, Outcome } from "./lifecycle.js";
import type { Logger } from "./logger.js";
import { expireDeadLocalRunners, recoverOrphans } from "./recovery.js";
import { runContext } from "./run-context.js";

export interface RunnerOptions {
  lifecycle: Lifecycle;
  executor: ActionExecutor;
  logger: Logger;
  challengeTtlMs: number;
  /** Actions doing browser work at once, across accounts (DESIGN §11 run slots). */
  maxConcurrent: number;
  /** Actions holding a page at needs_input at once; they hold no run slot. */
  maxPaused?: number;
  /** What process this is (`serve`, `mcp`, …), for the runners table. */
  kind?: string;
  /** Leases are wall-clock time between processes: never a test's fake clock. */
  leaseClock?: Clock;
  leaseMs?: number;
  heartbeatMs?: number;
  /** A graceful stop lets an action past its commit point finish for this long. */
  stopGraceMs?: number;
  /** Where this process serves live links (read at each heartbeat: it is known only once listening). */
  publicUrl: () => string;
  internalUrl: () => string;
  /** Called on every heartbeat, after recovery (e.g. settling a dead process's requests). */
  onHeartbeat?: () => void;
}

interface ActiveRun {
  action: ActionRecord;
  /** The fencing token of this run: the runner that claimed it, and the action's lease number then. */
  fence: Guard;
  controller: AbortController;
  challengeId: string | undefined;
  /** Set when the platform refused the last answer: the next challenge reopens the same one. */
  refusal: string | undefined;
  /** Set while paused at needs_input: the run holds its page but no run slot. */
  waiting: { resolve(answer: string | undefined): void; reject(reason: unknown): void } | undefined;
  /** The lease was lost: someone else recovers the action, this run writes nothing more. */
  forsaken: boolean;
  done: Promise<void>;
}

/** When the queue could not be read or claimed (a locked database), it is tried again this soon. */
const PUMP_RETRY_MS = 250;

/**
 * Claims queued actions (one per account, up to `maxConcurrent` doing browser work), runs
 * them through the executor and turns what the executor reports into status changes. The
 * store is the truth about who runs what (DESIGN §11): the runner holds a lease renewed by
 * heartbeat, writes its id and the action's lease number on what it claims, and every later
 * write for the action names both (fencing: a runner paused past its lease writes nothing). It
 * recovers what dead runners left, and takes answers and cancels from the store, wherever they
 * were written, woken by the store's change feed. Nothing it starts may end the process:
 * writes are retried while the database is busy, and every promise is handled.
 */
export class Runner {
  readonly #lease: Lease;
  readonly #runs = new Map<string, ActiveRun>();
  /** Accounts whose browser context a sign-in page holds: no action starts on them. */
  readonly #heldAccounts = new Set<string>();
  #stopped = false;
  #started = false;
  #timers: NodeJS.Timeout[] = [];
  #stopWatching: (() => void) | undefined;
  #pumping: Promise<void> | undefined;
  #pumpAgain = false;
  #pumpRetry: NodeJS.Timeout | undefined;

  constructor(private readonly options: RunnerOptions) {
    this.#lease = new Lease({
      store: options.lifecycle.store,
      logger: options.logger,
      kind: options.kind ?? "serve",
      clock: options.leaseClock ?? systemClock,
      leaseMs: options.leaseMs ?? 15_000,
      publicUrl: options.publicUrl,
      internalUrl: options.internalUrl,
      onLost: (lostId) => this.#forsake(lostId),
    });
  }

  /** This runner's id in the store (a new one after it lost its lease). */
  get runnerId(): string {
    return this.#lease.id;
  }

  /** Now on the lease clock (wall-clock time between processes). */
  leaseNow(): string {
    return this.#lease.now;
  }

  get activeCount(): number {
    return this.#runs.size;
  }

  /** Actions paused at needs_input with their page held here. */
  get pausedCount(): number {
    let paused = 0;
    for (const run of this.#runs.values()) if (run.waiting) paused += 1;
    return paused;
  }

  /** Registers the lease, recovers what dead runners left, and starts the heartbeat, the watch and the queue. */
  async start(): Promise<void> {
    this.#started = true;
    await retryWhileBusy(() => this.#lease.register());
    await this.#recover();
    this.#timers = [this.#every(this.options.heartbeatMs ?? 3_000, () => this.#heartbeat())];
    this.#stopWatching = this.options.lifecycle.store.changes.on(() => void this.#changedElsewhere());
    this.pump();
  }

  #every(ms: number, work: () => Promise<void>): NodeJS.Timeout {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      work()
        .catch((error: unknown) => {
          if (!isBusy(error)) this.options.logger.error({ err: error }, "runner housekeeping failed; it runs again shortly");
        })
        .finally(() => (running = false));
    }, ms);
    timer.unref();
    return timer;
  }

  async #recover(): Promise<void> {
    const { lifecycle, logger } = this.options;
    const clock = this.options.leaseClock ?? systemClock;
    await expireDeadLocalRunners(lifecycle, clock);
    if ((await recoverOrphans(lifecycle, logger, clock)) > 0) this.pump();
    this.options.onHeartbeat?.();
  }

  async #heartbeat(): Promise<void> {
    await this.renew();
    await this.#recover();
    // A backstop for a wake-up that never came (a dropped notification connection).
    await this.#sync();
    this.pump();
  }

  /** Renews the lease now (and says where live links are served); a lease already lost is given up. */
  async renew(): Promise<void> {
    if (!this.#started || this.#stopped) return;
    await this.#lease.renew();
  }

  /** The lease `lostId` expired: its runs are recovery's, and write nothing more. */
  #forsake(lostId: string): void {
    for (const run of this.#runs.values()) {
      if (run.action.runner_id !== lostId) continue;
      run.forsaken = true;
      run.controller.abort(new Error("lease lost"));
    }
  }

  /** Another process committed: answers for waiting runs, actions that ended elsewhere, new work. */
  async #changedElsewhere(): Promise<void> {
    try {
      await this.#sync();
    } catch (error) {
      if (!isBusy(error)) this.options.logger.error({ err: error }, "could not read what other processes changed");
    }
    this.pump();
  }

  async #sync(): Promise<void> {
    if (this.#runs.size === 0) return;
    const { store } = this.options.lifecycle;
    // The runs as they are before the read: each was claimed (committed) before it, so the status
    // read is its claim's or later. A run claimed meanwhile is not judged by a status read before.
    const runs = [...this.#runs];
    const statuses = await store.actions.statuses(runs.map(([id]) => id));
    for (const [id, run] of runs) {
      const status = statuses.get(id);
      // Ended (canceled, expired) or taken from this runner: stop driving its page.
      if (status === undefined || isTerminal(status) || status === "queued") run.controller.abort(new Error(`the action is ${status ?? "gone"}`));
    }
    const waiting = runs.map(([, run]) => run).filter((run) => run.waiting && run.challengeId);
    if (waiting.length === 0) return;
    const answered = new Set(await store.challenges.answered(waiting.map((run) => run.challengeId!)));
    for (const run of waiting) if (answered.has(run.challengeId!)) await this.deliver(run.action.id);
  }

  /** Starts whatever may start now; a busy database only delays it. One claim at a time, then once more if asked meanwhile. */
  pump(): void {
    if (this.#stopped || !this.#started) return;
    if (this.#pumping) {
      this.#pumpAgain = true;
      return;
    }
    this.#pumping = this.#claim()
      .catch((error: unknown) => {
        if (!isBusy(error)) this.options.logger.error({ err: error }, "could not start queued actions");
        this.#pumpRetry ??= setTimeout(() => {
          this.#pumpRetry = undefined;
          this.pump();
        }, PUMP_RETRY_MS);
      })
      .finally(() => {
        this.#pumping = undefined;
        if (this.#pumpAgain) {
          this.#pumpAgain = false;
          this.pump();
        }
      });
  }

  async #claim(): Promise<void> {
    const { maxConcurrent, lifecycle } = this.options;
    const maxRuns = maxConcurrent + (this.options.maxPaused ?? 200);
    const free = Math.min(maxConcurrent - (this.#runs.size - this.pausedCount), maxRuns - this.#runs.size);
    if (free <= 0) return;
    const busyHere = new Set(this.#heldAccounts);
    for (const run of this.#runs.values()) busyHere.add(run.action.account_id);
    const runnerId = this.#lease.id;
    const claimed = await lifecycle.claim(runnerId, { limit: free, skipAccounts: busyHere, holds: () => this.#lease.holds(runnerId) });
    for (const action of claimed) this.#start(action);
  }

  #accountRunning(accountId: string): boolean {
    for (const run of this.#runs.values()) if (run.action.account_id === accountId) return true;
    return false;
  }

  /**
   * The fence of a run claimed as `claimed` (DESIGN §11): a write for the action is made only while
   * it is still this claim's (same runner, same lease number) and that runner's lease still holds.
   */
  #fence(claimed: ActionRecord): Guard {
    const runnerId = claimed.runner_id;
    const lease = claimed.lease;
    return async (action) => action.runner_id === runnerId && action.lease === lease && runnerId !== undefined && (await this.#lease.holds(runnerId));
  }

  #start(action: ActionRecord): void {
    const { logger } = this.options;
    const run: ActiveRun = { action, fence: this.#fence(action), controller: new AbortController(), challengeId: undefined, refusal: undefined, waiting: undefined, forsaken: false, done: Promise.resolve() };
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
      const hooks = {
        signal: run.controller.signal,
        holds: () => this.#holds(run),
        challenge: (request: ChallengeRequest) => this.#challenge(run, request),
        refuseAnswer: (message: string) => this.#refuse(run, message),
      };
      const result = await executor.execute(await runContext(lifecycle, logger, run.action, hooks));
      run.controller.signal.throwIfAborted();
      outcome = { status: "succeeded", result };
    } catch (error) {
      outcome = await this.#failure(run, error);
    }
    if (run.forsaken) return;
    // Canceled and expired actions have already ended, recovered ones are someone else's: finish is then a no-op.
    await retryWhileBusy(() => lifecycle.finish(id, outcome, run.fence), {
      onBusy: (attempt) => attempt === 1 && logger.warn({ action_id: id }, "database busy; the action ends once it is free"),
    });
  }

  /** Whether the run still holds its action, read inside the caller's transaction. */
  async #holds(run: ActiveRun): Promise<boolean> {
    if (run.forsaken) return false;
    const action = await this.options.lifecycle.store.actions.get(run.action.id);
    return action !== undefined && !isTerminal(action.status) && (await run.fence(action));
  }

  /** How a run that threw ends; a browser failure says whether the platform may already have done it. */
  async #failure(run: ActiveRun, error: unknown): Promise<Outcome> {
    if (error instanceof ActionFailure && error.code !== "browser_error") return { status: "failed", code: error.code, message: error.message };
    if (!(error instanceof ActionFailure) && !run.controller.signal.aborted) {
      this.options.logger.error({ err: error, action_id: run.action.id }, "action failed in the browser");
    }
    const first = error instanceof ActionFailure ? error.message : "The browser failed while running the action.";
    const message = `${first} ${await this.#commitNote(run.action.id)}`;
    return { status: "failed", code: "browser_error", message, ...(error instanceof PlatformTimeout ? { freeBeforeCommit: true } : {}) };
  }

  async #commitNote(actionId: string): Promise<string> {
    let committed: string | undefined;
    try {
      committed = (await this.options.lifecycle.store.actions.get(actionId))?.committed_at;
    } catch {
      return "It may have stopped after the platform had done it: check the platform before retrying.";
    }
    return committed ? MAY_HAVE_BEEN_DONE : NOTHING_DONE;
  }

  /** Pauses at needs_input (a new challenge, or the same one again after a refused answer); the run slot is free meanwhile. */
  async #challenge(run: ActiveRun, request: ChallengeRequest): Promise<string | undefined> {
    const { lifecycle, challengeTtlMs } = this.options;
    const { store } = lifecycle;
    const signal = run.controller.signal;
    signal.throwIfAborted();
    await retryWhileBusy(() =>
      store.transaction(async () => {
        const now = lifecycle.clock.now();
        if (!(await this.#holds(run))) throw new ActionFailure("browser_error", "The action ended while pausing.");
        if (run.challengeId && run.refusal !== undefined) {
          await store.challenges.update(run.challengeId, { state: "open", message: run.refusal }, now.toISOString());
        } else {
          if (run.challengeId) await store.challenges.update(run.challengeId, { state: "resolved" }, now.toISOString());
          const challengeId = newId("chl");
          await store.challenges.insert(
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
        if (!(await lifecycle.move(run.action.id, ["running"], "needs_input", {}, run.fence))) throw new ActionFailure("browser_error", "The action ended while pausing.");
      }),
    );
    run.refusal = undefined;
    signal.throwIfAborted();
    const answer = new Promise<string | undefined>((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      run.waiting = {
        resolve: (value) => {
          signal.removeEventListener("abort", onAbort);
          resolve(value);
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
    // Paused: the slot is free for another account's action.
    this.pump();
    return answer;
  }

  /** The page moved on by itself (device approved, captcha solved in the live browser). */
  #resumeFromPage(run: ActiveRun): void {
    const waiting = run.waiting;
    const challengeId = run.challengeId;
    if (!waiting || !challengeId) return;
    run.waiting = undefined;
    const { lifecycle } = this.options;
    retryWhileBusy(() =>
      lifecycle.store.transaction(async () => {
        if (!(await lifecycle.move(run.action.id, ["needs_input"], "running", {}, run.fence))) throw new ActionFailure("browser_error", "The action ended while paused.");
        await lifecycle.store.challenges.update(challengeId, { state: "resolved" }, lifecycle.now());
      }),
    ).then(
      () => waiting.resolve(undefined),
      (error: unknown) => waiting.reject(error),
    );
  }

  /**
   * An answer was recorded in the store (by any process): if this runner holds the page
   * waiting for it, hand it over now. True when it was delivered here.
   */
  async deliver(actionId: string): Promise<boolean> {
    const run = this.#runs.get(actionId);
    const waiting = run?.waiting;
    if (!run || !waiting || !run.challengeId) return false;
    const { store } = this.options.lifecycle;
    const challengeId = run.challengeId;
    let answer: string | undefined;
    try {
      answer = await store.transaction(async () => ((await this.#holds(run)) ? store.challenges.takeAnswer(challengeId) : undefined));
    } catch (error) {
      // Busy: the next wake-up tries again.
      if (!isBusy(error)) this.options.logger.error({ err: error, action_id: actionId }, "could not take the answer");
      return false;
    }
    if (answer === undefined || run.waiting !== waiting) return false;
    run.waiting = undefined;
    waiting.resolve(answer);
    return true;
  }

  async #refuse(run: ActiveRun, message: string): Promise<void> {
    const { store } = this.options.lifecycle;
    const challengeId = run.challengeId;
    if (!challengeId) throw new Error("refuseAnswer called without a challenge");
    const refusals = await retryWhileBusy(() =>
      store.transaction(async () => {
        if (!(await this.#holds(run))) throw new ActionFailure("browser_error", "The action moved on while the answer was checked.");
        const count = (await store.challenges.get(challengeId))!.refusals + 1;
        await store.challenges.update(challengeId, { refusals: count }, this.options.lifecycle.now());
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
  async holdAccount(accountId: string): Promise<boolean> {
    if (this.#heldAccounts.has(accountId) || this.#accountRunning(accountId)) return false;
    this.#heldAccounts.add(accountId);
    if (await this.options.lifecycle.store.actions.hasActive(accountId)) {
      this.#heldAccounts.delete(accountId);
      return false;
    }
    return true;
  }

  releaseAccount(accountId: string): void {
    if (this.#heldAccounts.delete(accountId)) this.pump();
  }

  /**
   * Stops taking actions and hands back the ones it holds: before their commit point they go
   * back to the queue (another runner, or the next start, runs them again; a paused one asks
   * afresh); past it they may finish for a short grace, else fail saying the platform may
   * already have done it. Then the lease ends.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers) clearInterval(timer);
    this.#stopWatching?.();
    clearTimeout(this.#pumpRetry);
    await this.#pumping;
    const { lifecycle, logger } = this.options;
    const runs = [...this.#runs.values()];
    await Promise.all(
      runs.map(async (run) => {
        const id = run.action.id;
        const requeued = await retryWhileBusy(() => lifecycle.requeue(id, ["running", "needs_input"], run.fence), { giveUpAfterMs: 5_000 }).catch(() => false);
        if (!requeued) {
          const finished = await Promise.race([run.done.then(() => true), sleep(this.options.stopGraceMs ?? 10_000).then(() => false)]);
          if (!finished) {
            const message = `Interrupted: the service stopped while the action was running. ${await this.#commitNote(id)}`;
            await retryWhileBusy(() => lifecycle.finish(id, { status: "failed", code: "browser_error", message }, run.fence), { giveUpAfterMs: 5_000 }).catch((error: unknown) =>
              logger.error({ err: error, action_id: id }, "could not record the interrupted action"),
            );
          }
        }
        run.controller.abort(new Error("service stopping"));
      }),
    );
    await Promise.allSettled(runs.map((run) => run.done));
    if (this.#started) await retryWhileBusy(() => this.#lease.end(), { giveUpAfterMs: 5_000 }).catch(() => undefined);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

const MAY_HAVE_BEEN_DONE =
  "It stopped after the driver had begun the step that cannot be undone (e.g. clicking Post or Send): the platform may already have done it. Check the platform before you retry.";
const NOTHING_DONE = "It stopped before anything was submitted to the platform: nothing was done there, so a retry is safe.";
