import { hostname } from "node:os";
import { LIVE_LINK_TTL_MS, MAX_REFUSED_ANSWERS } from "../domain/challenges.js";
import { ActionFailure, PlatformTimeout } from "../domain/errors.js";
import { isTerminal } from "../domain/status.js";
import { isBusy, retryWhileBusy } from "../store/busy.js";
import { randomToken } from "../store/crypto.js";
import type { ActionRecord } from "../store/records.js";
import { systemClock, type Clock } from "./clock.js";
import type { ActionExecutor, ChallengeRequest } from "./executor.js";
import { newId } from "./ids.js";
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
  /** How often the store is checked for what other processes wrote (answers, cancels, new actions). */
  watchMs?: number;
  /** A graceful stop lets an action past its commit point finish for this long. */
  stopGraceMs?: number;
  /** Where this process serves live links (read at each heartbeat: it is known only once listening). */
  publicUrl: () => string;
  /** Called on every heartbeat, after recovery (e.g. settling a dead process's requests). */
  onHeartbeat?: () => void;
}

interface ActiveRun {
  action: ActionRecord;
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
/** The store is scanned at least every this many watch ticks even when nothing seems to have changed. */
const FULL_SCAN_EVERY = 10;

/**
 * Claims queued actions (one per account, up to `maxConcurrent` doing browser work), runs
 * them through the executor and turns what the executor reports into status changes. The
 * store is the truth about who runs what (DESIGN §11): the runner holds a lease renewed by
 * heartbeat, writes its id on what it claims, recovers what dead runners left, and takes
 * answers and cancels from the store, wherever they were written. Nothing it starts may end
 * the process: writes are retried while the database is locked, and every promise is handled.
 */
export class Runner {
  #id = newId("run");
  readonly #runs = new Map<string, ActiveRun>();
  /** Accounts whose browser context a sign-in page holds: no action starts on them. */
  readonly #heldAccounts = new Set<string>();
  readonly #leaseClock: Clock;
  #stopped = false;
  #started = false;
  #timers: NodeJS.Timeout[] = [];
  #pumpRetry: NodeJS.Timeout | undefined;
  #dataVersion = -1;
  #ticks = 0;

  constructor(private readonly options: RunnerOptions) {
    this.#leaseClock = options.leaseClock ?? systemClock;
  }

  /** This runner's id in the store (a new one after it lost its lease). */
  get runnerId(): string {
    return this.#id;
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

  get #leaseNow(): string {
    return this.#leaseClock.now().toISOString();
  }

  #leaseUntil(): string {
    return new Date(this.#leaseClock.now().getTime() + (this.options.leaseMs ?? 15_000)).toISOString();
  }

  /** Registers the lease, recovers what dead runners left, and starts the heartbeat, the watch and the queue. */
  start(): void {
    this.#started = true;
    this.#register();
    this.#recover();
    this.#timers = [
      this.#every(this.options.heartbeatMs ?? 3_000, () => this.#heartbeat()),
      this.#every(this.options.watchMs ?? 100, () => this.#watch()),
    ];
    this.pump();
  }

  #every(ms: number, work: () => void): NodeJS.Timeout {
    const timer = setInterval(() => {
      try {
        work();
      } catch (error) {
        if (!isBusy(error)) this.options.logger.error({ err: error }, "runner housekeeping failed; it runs again shortly");
      }
    }, ms);
    timer.unref();
    return timer;
  }

  #register(): void {
    const { store } = this.options.lifecycle;
    const record = {
      id: this.#id,
      kind: this.options.kind ?? "serve",
      host: hostname(),
      pid: process.pid,
      public_url: this.options.publicUrl(),
      started_at: this.#leaseNow,
      lease_expires_at: this.#leaseUntil(),
    };
    store.transaction(() => store.runners.register(record));
  }

  #recover(): void {
    const { lifecycle, logger } = this.options;
    expireDeadLocalRunners(lifecycle, this.#leaseClock);
    if (recoverOrphans(lifecycle, logger, this.#leaseClock) > 0) this.pump();
    this.options.onHeartbeat?.();
  }

  #heartbeat(): void {
    this.renew();
    this.#recover();
  }

  /** Renews the lease now (and says where live links are served); a lease already lost is given up. */
  renew(): void {
    if (!this.#started || this.#stopped) return;
    const { store } = this.options.lifecycle;
    const renewed = store.transaction(() => store.runners.renew(this.#id, this.#leaseNow, this.#leaseUntil(), this.options.publicUrl()));
    if (!renewed) this.#lostLease();
  }

  /**
   * The lease expired before it was renewed (the process stalled, the database was locked too
   * long): other runners may already have recovered its actions. It gives them up without
   * writing anything, then carries on under a new lease.
   */
  #lostLease(): void {
    this.options.logger.error({ runner_id: this.#id, actions: this.#runs.size }, "lease lost: giving up this runner's actions to recovery");
    for (const run of this.#runs.values()) {
      run.forsaken = true;
      run.controller.abort(new Error("lease lost"));
    }
    this.#id = newId("run");
    this.#register();
  }

  /** Notices what other processes wrote: answers for waiting runs, actions that ended elsewhere, new work. */
  #watch(): void {
    const version = this.options.lifecycle.store.dataVersion();
    if (version === this.#dataVersion && ++this.#ticks % FULL_SCAN_EVERY !== 0) return;
    this.#dataVersion = version;
    this.#sync();
    this.pump();
  }

  #sync(): void {
    if (this.#runs.size === 0) return;
    const { store } = this.options.lifecycle;
    const statuses = store.actions.statuses([...this.#runs.keys()]);
    for (const [id, run] of this.#runs) {
      const status = statuses.get(id);
      // Ended (canceled, expired) or taken from this runner: stop driving its page.
      if (status === undefined || isTerminal(status) || status === "queued") run.controller.abort(new Error(`the action is ${status ?? "gone"}`));
    }
    const waiting = [...this.#runs.values()].filter((run) => run.waiting && run.challengeId);
    if (waiting.length === 0) return;
    const answered = new Set(store.challenges.answered(waiting.map((run) => run.challengeId!)));
    for (const run of waiting) if (answered.has(run.challengeId!)) this.deliver(run.action.id);
  }

  /** Starts whatever may start now; a locked database only delays it. */
  pump(): void {
    if (this.#stopped || !this.#started) return;
    const { maxConcurrent } = this.options;
    const maxRuns = maxConcurrent + (this.options.maxPaused ?? 200);
    try {
      for (const action of this.options.lifecycle.store.actions.claimable()) {
        if (this.#runs.size - this.pausedCount >= maxConcurrent || this.#runs.size >= maxRuns) break;
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

  /** Writes only while this runner still holds the action (recovery may have taken it). */
  readonly #mine: Guard = (action) => action.runner_id === this.#id;

  #start(action: ActionRecord): void {
    const { lifecycle, logger } = this.options;
    const { store } = lifecycle;
    // Claimed in one transaction with a check that this runner's lease still holds.
    const claimed = lifecycle.move(action.id, ["queued"], "running", { runner_id: this.#id }, () => store.runners.isLive(this.#id, this.#leaseNow));
    if (!claimed) return;
    const run: ActiveRun = { action: { ...action, runner_id: this.#id }, controller: new AbortController(), challengeId: undefined, refusal: undefined, waiting: undefined, forsaken: false, done: Promise.resolve() };
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
    if (run.forsaken) return;
    // Canceled and expired actions have already ended, recovered ones are someone else's: finish is then a no-op.
    await retryWhileBusy(() => lifecycle.finish(id, outcome, this.#mine), {
      onBusy: (attempt) => attempt === 1 && logger.warn({ action_id: id }, "database locked; the action ends once it is free"),
    });
  }

  /** How a run that threw ends; a browser failure says whether the platform may already have done it. */
  #failure(run: ActiveRun, error: unknown): Outcome {
    if (error instanceof ActionFailure && error.code !== "browser_error") return { status: "failed", code: error.code, message: error.message };
    if (!(error instanceof ActionFailure) && !run.controller.signal.aborted) {
      this.options.logger.error({ err: error, action_id: run.action.id }, "action failed in the browser");
    }
    const first = error instanceof ActionFailure ? error.message : "The browser failed while running the action.";
    const message = `${first} ${this.#commitNote(run.action.id)}`;
    return { status: "failed", code: "browser_error", message, ...(error instanceof PlatformTimeout ? { freeBeforeCommit: true } : {}) };
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

  /** Pauses at needs_input (a new challenge, or the same one again after a refused answer); the run slot is free meanwhile. */
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
        if (!lifecycle.move(run.action.id, ["running"], "needs_input", {}, this.#mine)) throw new ActionFailure("browser_error", "The action ended while pausing.");
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
      lifecycle.store.transaction(() => {
        lifecycle.store.challenges.update(challengeId, { state: "resolved" }, lifecycle.now());
        lifecycle.move(run.action.id, ["needs_input"], "running", {}, this.#mine);
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
  deliver(actionId: string): boolean {
    const run = this.#runs.get(actionId);
    const waiting = run?.waiting;
    if (!run || !waiting || !run.challengeId) return false;
    const { store } = this.options.lifecycle;
    const challengeId = run.challengeId;
    let answer: string | undefined;
    try {
      answer = store.transaction(() => store.challenges.takeAnswer(challengeId));
    } catch (error) {
      // Locked: the next watch tick tries again.
      if (!isBusy(error)) this.options.logger.error({ err: error, action_id: actionId }, "could not take the answer");
      return false;
    }
    if (answer === undefined) return false;
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

  /**
   * Stops taking actions and hands back the ones it holds: before their commit point they go
   * back to the queue (another runner, or the next start, runs them again; a paused one asks
   * afresh); past it they may finish for a short grace, else fail saying the platform may
   * already have done it. Then the lease ends.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers) clearInterval(timer);
    clearTimeout(this.#pumpRetry);
    const { lifecycle, logger } = this.options;
    const runs = [...this.#runs.values()];
    await Promise.all(
      runs.map(async (run) => {
        const id = run.action.id;
        const requeued = await retryWhileBusy(() => lifecycle.requeue(id, ["running", "needs_input"], this.#mine), { giveUpAfterMs: 5_000 }).catch(() => false);
        if (!requeued) {
          const finished = await Promise.race([run.done.then(() => true), sleep(this.options.stopGraceMs ?? 10_000).then(() => false)]);
          if (!finished) {
            const message = `Interrupted: the service stopped while the action was running. ${this.#commitNote(id)}`;
            await retryWhileBusy(() => lifecycle.finish(id, { status: "failed", code: "browser_error", message }, this.#mine), { giveUpAfterMs: 5_000 }).catch((error: unknown) =>
              logger.error({ err: error, action_id: id }, "could not record the interrupted action"),
            );
          }
        }
        run.controller.abort(new Error("service stopping"));
      }),
    );
    await Promise.allSettled(runs.map((run) => run.done));
    if (this.#started) {
      await retryWhileBusy(() => lifecycle.store.transaction(() => lifecycle.store.runners.expire(this.#id, this.#leaseNow)), { giveUpAfterMs: 5_000 }).catch(() => undefined);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

const MAY_HAVE_BEEN_DONE =
  "It stopped after the driver had begun the step that cannot be undone (e.g. clicking Post or Send): the platform may already have done it. Check the platform before you retry.";
const NOTHING_DONE = "It stopped before anything was submitted to the platform: nothing was done there, so a retry is safe.";
