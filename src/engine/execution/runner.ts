import { LIVE_LINK_TTL_MS } from "../../domain/challenges.js";
import { isTerminal } from "../../domain/status.js";
import { CommitUnknownError, QUEUED_SUBJECT, actionChange, isBusy, isOutcomeUnknown, retryWhileBusy, type Change, type WorkDue } from "../../store/index.js";
import type { ActionRecord } from "../../store/records.js";
import { systemClock, type Clock } from "../clock.js";
import type { ActionExecutor } from "./executor.js";
import { Lease } from "./lease.js";
import type { Lifecycle } from "./lifecycle.js";
import type { Logger } from "../logger.js";
import { RegisteredRunners, expireDeadLocalRunners, handBack, recoverOrphans, unrunActions } from "./recovery.js";
import { NO_INBOX, Run, type RunParts } from "./run.js";
import { PacedWakeUp } from "./wake-up.js";

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
  /** Leases are time between processes, never a test's fake clock: on PostgreSQL the database's (`DatabaseClock`). */
  leaseClock?: Clock;
  leaseMs?: number;
  heartbeatMs?: number;
  /** A graceful stop lets an action past its commit point finish for this long. */
  stopGraceMs?: number;
  /** Where this process serves live links (read at each heartbeat: it is known only once listening). */
  publicUrl: () => string;
  internalUrl: () => string;
  /**
   * Called at start and on every heartbeat, after recovery, with what the lease's renewal found
   * due (`ALL_DUE` at start): e.g. settling a dead process's requests, a challenge's deadline.
   */
  onHeartbeat?: (due: WorkDue) => void;
  /** The accounts' inboxes (DESIGN §15); none: nothing arrives by itself. */
  inbox?: RunParts["inbox"];
}

/** What start-up does not know yet: everything may be due. */
export const ALL_DUE: WorkDue = {
  recover: true,
  abandonedKeys: true,
  paymentsInFlight: true,
  queued: true,
  nextNotBefore: undefined,
  nextDeadline: undefined,
  nextDelivery: undefined,
  runners: "",
  held: 0,
};

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
 *
 * Woken only for what it must act on (DESIGN §11, "Scaling out adds capacity"): on PostgreSQL a
 * notification names what changed and who wrote it, and the runner syncs only actions it holds,
 * claims only when another coordinator left queued work it could not take itself (`offer`) or a
 * sign-in hold was released, and leaves its own commits alone (it acted on them as it made them).
 */
export class Runner {
  readonly #lease: Lease;
  readonly #runs = new Map<string, Run>();
  /** Accounts whose browser context a sign-in page here holds, each with the runner id its hold in the store names. */
  readonly #heldAccounts = new Map<string, string>();
  readonly #holdsLost = new Set<(accountIds: string[]) => void>();
  #stopped = false;
  #started = false;
  #timers: NodeJS.Timeout[] = [];
  #stopWatching: (() => void) | undefined;
  #pumping: Promise<void> | undefined;
  /** Asked to pump while a pump was under way: once more after it, looking first only if every ask said so. */
  #pumpAgain: { lookFirst: boolean } | undefined;
  #pumpRetry: NodeJS.Timeout | undefined;
  /** A claim's outcome was lost, or a run ended without its end written: the next pump checks what the database says this runner holds (`unrunActions`). */
  #unrunMaybe = false;
  /** Actions whose run here ended abnormally since that check: failed by it, never run again. */
  readonly #endedAbnormally = new Set<string>();
  /** Queued work was written here since the last claim (`offer`): if it cannot all be taken here, the others are woken for it. */
  #offered = false;
  /** Actions a notification said changed elsewhere, to sync at the next turn of the event loop (those of one commit at once). */
  readonly #toSync = new Set<string>();
  #syncing: Promise<void> | undefined;
  readonly #wakeUp: PacedWakeUp;
  readonly #registered = new RegisteredRunners();
  #beating = false;

  constructor(private readonly options: RunnerOptions) {
    this.#lease = new Lease({
      store: options.lifecycle.store,
      logger: options.logger,
      kind: options.kind ?? "serve",
      clock: options.leaseClock ?? systemClock,
      leaseMs: options.leaseMs ?? 15_000,
      publicUrl: options.publicUrl,
      internalUrl: options.internalUrl,
      freeSlots: () => this.#freeSlots(),
      onLost: (lostId) => this.#forsake(lostId),
    });
    this.#wakeUp = new PacedWakeUp(options.lifecycle, () => this.pump());
  }

  /** This runner's id in the store (a new one after it lost its lease). */
  get runnerId(): string {
    return this.#lease.id;
  }

  /** Reads the clock leases are judged by, when it is the database's (PostgreSQL); nothing on SQLite. */
  readClock(): Promise<void> {
    return retryWhileBusy(() => this.#lease.readClock());
  }

  /** Now on the lease clock (time between processes: the database's on PostgreSQL). */
  leaseNow(): string {
    return this.#lease.now;
  }

  get activeCount(): number {
    return this.#runs.size;
  }

  /** Run slots no action uses now (paused actions hold none): where health checks may run. */
  get idleSlots(): number {
    return this.options.maxConcurrent - (this.#runs.size - this.pausedCount);
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
    this.options.onHeartbeat?.(ALL_DUE);
    const heartbeatMs = this.options.heartbeatMs ?? 3_000;
    // The heartbeat follows each renewal, from what it found due, without holding the next one up:
    // recovery or a read held up by a busy database never delays a renewal.
    this.#timers = [this.#every(heartbeatMs, () => this.renew())];
    this.#stopWatching = this.options.lifecycle.store.changes.on((change) => this.#changed(change));
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
    if ((await recoverOrphans(lifecycle, logger, clock)) > 0) this.offer();
  }

  /**
   * What the timers found by polling, from what the renewal found due (`WorkDue`): recovery when a
   * lease ended or a runner of this machine is gone, the queue when it holds work that may start,
   * the paced wake-up at the earliest `not_before`. With nothing due, no statement at all.
   */
  async #heartbeat(due: WorkDue): Promise<void> {
    if (due.recover || (await this.#registered.anyDeadHere(this.options.lifecycle.store, due.runners))) await this.#recover();
    // The store says this runner holds more than it runs: a claim whose answer never came, or a run
    // whose end was never written, whatever lost it. (A run that ended since the renewal read is
    // counted there too: the check then finds nothing.)
    if (due.held > this.#runsUnder(this.#lease.id)) {
      this.#unrunMaybe = true;
      this.pump();
    }
    this.options.onHeartbeat?.(due);
    // A backstop for a wake-up that never came (a dropped notification connection).
    await this.#sync();
    this.#wakeUp.learn(due.nextNotBefore);
    if (due.queued) this.pump();
  }

  /** Renews the lease now (and says where live links are served); a lease already lost is given up. Then the heartbeat, in the background. */
  async renew(): Promise<void> {
    if (!this.#started || this.#stopped) return;
    const due = await this.#lease.renew();
    if (due === undefined || this.#beating) return;
    this.#beating = true;
    this.#heartbeat(due)
      .catch((error: unknown) => {
        if (!isBusy(error)) this.options.logger.error({ err: error }, "runner housekeeping failed; it runs again shortly");
      })
      .finally(() => (this.#beating = false));
  }

  /** The lease `lostId` expired, or was not renewed in time: its runs are recovery's, and write nothing more; its sign-in holds are gone with it. */
  #forsake(lostId: string): void {
    for (const run of this.#runs.values()) {
      if (run.action.runner_id !== lostId) continue;
      run.forsaken = true;
      run.controller.abort(new Error("lease lost"));
    }
    const lostHolds = [...this.#heldAccounts].filter(([, runnerId]) => runnerId === lostId).map(([accountId]) => accountId);
    if (lostHolds.length > 0) for (const listener of this.#holdsLost) listener(lostHolds);
  }

  /**
   * Calls `listener` with the accounts whose sign-in holds a lost lease took with it: another
   * coordinator may hold them now, so the pages held under them must close (their `releaseAccount`
   * then deletes only the dead hold's row, never a newer holder's). Returns the unsubscribe.
   */
  onHoldsLost(listener: (accountIds: string[]) => void): () => void {
    this.#holdsLost.add(listener);
    return () => this.#holdsLost.delete(listener);
  }

  /**
   * The change feed's word. Without a notification (SQLite; PostgreSQL's feed after a gap or at its
   * slow poll) anything may have changed: every run is synced and the queue claimed from. With one,
   * only what concerns this runner: an action it holds (an answer or a cancel written elsewhere),
   * queued work another coordinator could not take, a released sign-in hold. Its own commits wake
   * nothing: it acted on them as it made them.
   */
  #changed(change?: Change): void {
    if (change === undefined) return void this.#changedElsewhere();
    if (change.origin === this.options.lifecycle.store.origin) return;
    const action = actionChange(change.subject);
    if (action) {
      // A new action of an account warm here (migrations/postgres 015): the others pass it over for this runner.
      if (action.status === "queued" && action.runnerId === this.#lease.id && !this.#runs.has(action.actionId)) return this.pump();
      // Held here, or being claimed here now (its run starts once the claim's reply is back).
      if (this.#runs.has(action.actionId) || action.runnerId === this.#lease.id) this.#syncSoon(action.actionId);
    } else if (change.subject === QUEUED_SUBJECT || change.subject.startsWith("account:")) this.pump();
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

  /** Syncs `actionId` with the store soon: the notifications of one commit (its action's, its challenge's) make one read. */
  #syncSoon(actionId: string): void {
    const first = this.#toSync.size === 0;
    this.#toSync.add(actionId);
    if (first && !this.#syncing) setImmediate(() => void this.#syncNotified());
  }

  async #syncNotified(): Promise<void> {
    if (this.#syncing || this.#toSync.size === 0) return;
    const ids = new Set(this.#toSync);
    this.#toSync.clear();
    this.#syncing = (async () => {
      // A claim under way has its runs started first: the sync judges them too.
      await this.#pumping;
      await this.#sync(ids);
    })()
      .catch((error: unknown) => {
        if (!isBusy(error)) this.options.logger.error({ err: error }, "could not read what other processes changed");
        // Tried again at the next notification, or at the heartbeat's sync.
      })
      .finally(() => {
        this.#syncing = undefined;
        if (this.#toSync.size > 0) void this.#syncNotified();
      });
    await this.#syncing;
  }

  /** Syncs the runs (`only`: those of these actions) with the store: ended or taken elsewhere, they stop; answered, they get the answer. */
  async #sync(only?: ReadonlySet<string>): Promise<void> {
    if (this.#runs.size === 0) return;
    const { store } = this.options.lifecycle;
    // The runs as they are before the read: each was claimed (committed) before it, so the status
    // read is its claim's or later. A run claimed meanwhile is not judged by a status read before.
    const runs = [...this.#runs].filter(([id]) => only === undefined || only.has(id));
    if (runs.length === 0) return;
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

  /**
   * Starts whatever may start now; a busy database only delays it. One claim at a time, then once
   * more if asked meanwhile. `lookFirst`: nothing is known to wait (a run ended): look before
   * claiming (`Lifecycle.claim`).
   */
  pump(options: { lookFirst?: boolean } = {}): void {
    if (this.#stopped || !this.#started) return;
    const lookFirst = options.lookFirst === true;
    if (this.#pumping) {
      this.#pumpAgain = { lookFirst: lookFirst && (this.#pumpAgain?.lookFirst ?? true) };
      return;
    }
    this.#pumping = this.#claim(lookFirst)
      .catch((error: unknown) => {
        // The claim may have committed: what it took is this runner's, and nobody else's to run.
        if (error instanceof CommitUnknownError) this.#unrunMaybe = true;
        if (!isBusy(error)) this.options.logger.error({ err: error }, "could not start queued actions");
        this.#pumpRetry ??= setTimeout(() => {
          this.#pumpRetry = undefined;
          this.pump();
        }, PUMP_RETRY_MS);
      })
      .finally(() => {
        this.#pumping = undefined;
        const again = this.#pumpAgain;
        if (again) {
          this.#pumpAgain = undefined;
          this.pump(again);
        }
      });
  }

  /**
   * Queued work was written here (a new action, actions recovered): claimed here at once when a run
   * slot is free; what this runner cannot take (no free slot, or no runner running here) wakes the
   * coordinators that may (DESIGN §11: other coordinators are woken only for work theirs to take).
   */
  offer(): void {
    if (this.#stopped || !this.#started) return void this.#wakeClaimers();
    this.#offered = true;
    this.pump();
  }

  /** One notification that queued work waits for a free run slot: every coordinator with one claims. */
  async #wakeClaimers(): Promise<void> {
    await retryWhileBusy(() => this.options.lifecycle.store.wakeUps.wakeClaimers(), { giveUpAfterMs: 5_000 }).catch((error: unknown) =>
      this.options.logger.warn({ err: error }, "could not wake the other coordinators for queued work; their heartbeat claims it"),
    );
  }

  async #claim(lookFirst: boolean): Promise<void> {
    const { lifecycle, executor, logger } = this.options;
    // First, while no claim is under way: what this runner holds in the database and does not run.
    if (this.#unrunMaybe) {
      const runnerId = this.#lease.id;
      const ended = new Set(this.#endedAbnormally);
      const runs = { driven: (actionId: string) => this.#runs.has(actionId), ranHere: (actionId: string) => ended.has(actionId) };
      const toRun = await unrunActions(lifecycle, logger, runnerId, runs, (id) => this.#lease.holds(id));
      this.#unrunMaybe = false;
      for (const actionId of ended) this.#endedAbnormally.delete(actionId);
      if (runnerId === this.#lease.id) for (const action of toRun) this.#start(action);
    }
    const free = this.#freeSlots();
    const offered = this.#offered;
    this.#offered = false;
    if (free <= 0) {
      if (offered) await this.#wakeClaimers();
      return;
    }
    const busyHere = new Set(this.#heldAccounts.keys());
    for (const run of this.#runs.values()) busyHere.add(run.action.account_id);
    const runnerId = this.#lease.id;
    // The take checks the lease in the database itself: here only what this process knows of it (self-fencing).
    const { taken, deferred, more } = await lifecycle.claim(runnerId, {
      limit: free,
      skipAccounts: busyHere,
      warmAccounts: executor.warmAccounts?.() ?? [],
      holds: () => this.#lease.holdsHere(runnerId),
      leaseNow: () => this.#lease.now,
      // Work written here is known to wait.
      lookFirst: lookFirst && !offered,
    });
    for (const action of taken) this.#start(action);
    // Every free slot filled and claimable work left: it is for another coordinator's free slots.
    if (taken.length >= free && more) await this.#wakeClaimers();
    // Not at every pump: when this claim deferred, and at each heartbeat for others' deferrals.
    if (deferred) await this.#wakeUp.set();
  }

  #runsUnder(runnerId: string): number {
    let count = 0;
    for (const run of this.#runs.values()) if (run.action.runner_id === runnerId) count += 1;
    return count;
  }

  /** Run slots this runner could fill now: doing browser work, within the bound on pages held at needs_input. */
  #freeSlots(): number {
    const { maxConcurrent } = this.options;
    const maxRuns = maxConcurrent + (this.options.maxPaused ?? 200);
    return Math.min(maxConcurrent - (this.#runs.size - this.pausedCount), maxRuns - this.#runs.size);
  }

  #accountRunning(accountId: string): boolean {
    for (const run of this.#runs.values()) if (run.action.account_id === accountId) return true;
    return false;
  }

  #start(action: ActionRecord): void {
    const { lifecycle, executor, logger, challengeTtlMs } = this.options;
    const inbox = this.options.inbox ?? NO_INBOX;
    const run = new Run(action, { lifecycle, executor, logger, challengeTtlMs, inbox, leaseHolds: (runnerId) => this.#lease.holds(runnerId), leaseHere: (runnerId) => (this.#lease.holdsHere(runnerId) ? this.#lease.now : undefined), paused: () => this.pump() });
    this.#runs.set(action.id, run);
    run.done = run
      .execute()
      .catch((error: unknown) => {
        logger.error({ err: error, action_id: action.id }, "action run ended abnormally");
        this.#endedAbnormally.add(action.id);
        this.#unrunMaybe = true;
      })
      .finally(() => {
        this.#runs.delete(action.id);
        this.pump({ lookFirst: true });
      });
  }

  /**
   * An answer was recorded in the store (by any process): if this runner holds the page
   * waiting for it, hand it over now. True when it was delivered here.
   */
  async deliver(actionId: string): Promise<boolean> {
    return (await this.#runs.get(actionId)?.deliver()) ?? false;
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
   * context). True, and no action starts on the account on any coordinator until `releaseAccount`
   * (or this runner's lease ends), when none runs or waits now; false otherwise. The hold is in the
   * store (DESIGN §11), for as long as a live link lasts at most.
   */
  async holdAccount(accountId: string): Promise<boolean> {
    if (this.#heldAccounts.has(accountId) || this.#accountRunning(accountId)) return false;
    const runnerId = this.#lease.id;
    this.#heldAccounts.set(accountId, runnerId);
    const lease = { now: this.#lease.now, expiresAt: new Date(Date.parse(this.#lease.now) + LIVE_LINK_TTL_MS).toISOString() };
    let held = false;
    try {
      held = await retryWhileBusy(() => this.options.lifecycle.holdAccount(accountId, runnerId, lease));
    } catch (error) {
      // The hold may have committed without its answer: given up, or the account's actions would
      // wait out its expiry.
      if (isOutcomeUnknown(error)) await retryWhileBusy(() => this.options.lifecycle.releaseAccount(accountId, runnerId), { checksItsEffect: true, giveUpAfterMs: 30_000 }).catch(() => undefined);
      throw error;
    } finally {
      if (!held) this.#heldAccounts.delete(accountId);
    }
    return held;
  }

  releaseAccount(accountId: string): void {
    const runnerId = this.#heldAccounts.get(accountId);
    if (runnerId === undefined) return;
    this.#heldAccounts.delete(accountId);
    retryWhileBusy(() => this.options.lifecycle.releaseAccount(accountId, runnerId))
      .catch((error: unknown) => this.options.logger.error({ err: error, account_id: accountId }, "could not release the account's sign-in hold; it ends with its expiry or this runner's lease"))
      .finally(() => this.pump());
  }

  /** Stops taking actions, hands back the ones it holds (`handBack`: requeued, or a short grace to finish), then ends its lease. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers) clearInterval(timer);
    this.#stopWatching?.();
    clearTimeout(this.#pumpRetry);
    this.#wakeUp.stop();
    this.#lease.stop();
    await this.#pumping;
    const handedBack = this.#runs.size > 0;
    await handBack([...this.#runs.values()], this.options.lifecycle, this.options.logger, this.options.stopGraceMs ?? 10_000);
    // What it requeued is for the others now.
    if (handedBack) await this.#wakeClaimers();
    if (this.#started) await retryWhileBusy(() => this.#lease.end(), { giveUpAfterMs: 5_000 }).catch(() => undefined);
  }
}
