import { EventEmitter } from "node:events";
import { isCharged } from "../../domain/credits.js";
import type { AnsweredBy } from "../../domain/inbox.js";
import { ACTION_ERRORS, type ActionErrorCode } from "../../domain/errors.js";
import { isTerminal, transition, type ActionStatus } from "../../domain/status.js";
import { mayHoldSecrets } from "../../domain/secret-params.js";
import type { Store } from "../../store/index.js";
import type { ActionRecord, ChallengeState } from "../../store/records.js";
import type { Clock } from "../clock.js";
import { recordAccountOutcome, recordActionEvent, recordClaimEvents } from "../outbox/index.js";
import { Follows } from "./follows.js";
import { recordPaceOutcome, type Pacing } from "./pacing.js";

/** How an action ends. */
export type Outcome =
  | { status: "succeeded"; result: Record<string, unknown> }
  /** `freeBeforeCommit`: no charge when the action had not reached its commit point (the platform did not answer). */
  /** `retryAfterSeconds`: the wait a `rate_limited` platform named, when the driver read one. */
  /** `details`: shown in the error object (a step that could not be done: its index, path and the page's snapshot). */
  | { status: "failed"; code: ActionErrorCode; message?: string; freeBeforeCommit?: boolean; retryAfterSeconds?: number; details?: Record<string, unknown> }
  | { status: "canceled" };

/**
 * A condition on the action, checked inside the change's transaction: e.g. "this runner still
 * holds it", so a runner that lost its lease cannot end an action someone else now runs.
 */
export type Guard = (action: ActionRecord) => boolean | Promise<boolean>;

/** Whether a `change` was committed by this process or announced from another (`ChangesElsewhere`). */
export type ChangeOrigin = "here" | "elsewhere";

/**
 * How long an action just queued (or just past its pace) is left to the live coordinator that ran
 * its account last, while that one has a free run slot: its browser holds the account warm, and it
 * claims the action itself within milliseconds. Past this, any coordinator takes it (that one is
 * busier than its last renewal said, frozen, or slow to hear).
 */
export const PASS_OVER_MS = 1_500;
/**
 * How long a coordinator takes actions of accounts warm in its browser before older ones of cold
 * accounts: an action queued longer ranks with the warm ones, oldest first, so a stream of actions
 * on warm accounts never keeps a cold account's waiting for long.
 */
export const PREFER_WARM_MS = 30_000;

const CHALLENGE_END: Record<Outcome["status"], ChallengeState> = { succeeded: "resolved", failed: "failed", canceled: "canceled" };

/**
 * Status changes, one transaction each, checked against `TRANSITIONS`, each with its event in the
 * outbox; emits `change` with the new record after every committed change (and, from
 * `ChangesElsewhere`, after another process's, marked `elsewhere`).
 */
export class Lifecycle {
  readonly events = new EventEmitter<{ change: [action: ActionRecord, origin: ChangeOrigin] }>();
  /** What the listeners of `change` follow of other processes' changes (only those are read and announced, on PostgreSQL). */
  readonly follows = new Follows();
  /** This process's changes written and not yet announced (`committingKey`): their commit is on its way. */
  readonly #committing = new Set<string>();

  constructor(
    readonly store: Store,
    readonly clock: Clock,
    /** Each account's pace, checked at claim time (DESIGN §16). */
    readonly pacing: Pacing,
  ) {
    this.events.setMaxListeners(0);
  }

  now(): string {
    return this.clock.now().toISOString();
  }

  /** Tells listeners of this record of an action once what wrote it has committed (at once, outside a transaction). */
  announce(action: ActionRecord): void {
    const key = committingKey(action);
    this.#committing.add(key);
    this.store.afterCommit(
      () => {
        try {
          this.events.emit("change", action, "here");
        } finally {
          this.#committing.delete(key);
        }
      },
      () => this.#committing.delete(key),
    );
  }

  /**
   * Whether this record of an action is a change this process wrote whose commit it has not yet
   * announced: the database has it (another connection may read it) before the commit's reply
   * reaches this process. The change feed leaves it to that announcement, not another's.
   */
  isCommitting(action: ActionRecord): boolean {
    return this.#committing.has(committingKey(action));
  }

  /**
   * Tells listeners of the action as it now is, once the change has committed. Called inside the
   * transaction that changed it, so listeners are told the moment it commits: read after, a
   * process's own change could reach them first from the change feed, as another's (`elsewhere`).
   */
  async emit(actionId: string): Promise<void> {
    const action = await this.store.actions.get(actionId);
    if (action) this.announce(action);
  }

  /**
   * Claims up to `limit` queued actions for `runnerId` (the oldest queued action of each account
   * with none running or waiting, skipping `skipAccounts`), each `running` under a new lease
   * number, while `holds()` says the runner's lease holds here and its row says so in the database
   * (checked by the take). A candidate past its account's pace stays queued with `not_before`
   * (DESIGN §16), and the slot goes to the next candidate (`deferred` says whether any was, so the
   * runner sets its wake-up timer). On PostgreSQL the candidates are locked `FOR UPDATE SKIP
   * LOCKED`: coordinators claiming at once take different actions, and none waits for another.
   * Accounts an owner's sign-in page holds (`holdAccount`, on any coordinator) are passed over;
   * `leaseNow` is now on the lease clock, which judges holds as it judges runners' leases.
   *
   * Batched (DESIGN §11 "claims are batched"): one read of the candidates with their paces, one
   * of the starts their paces count, one take, one insert of their events, whatever their number.
   * Affinity: accounts warm here (`warmAccounts`, or run last by this runner) come first; an account
   * another live runner with a free slot ran last is left to it for `PASS_OVER_MS` (`claimable`).
   *
   * `more`: whether claimable work was left once `limit` was reached (each round looks at one
   * candidate more than it may take); only then are the other coordinators woken (docs/decisions.md).
   *
   * `lookFirst`: one read without a transaction or a lock first, and the claim only when it found a
   * candidate. For a slot that a run freed, where nothing waits most of the time: one statement, not
   * a transaction of three (and on SQLite no write lock taken for nothing). Work queued after the
   * look wakes a claim of its own (`Runner.offer`, the change feed).
   */
  async claim(
    runnerId: string,
    options: { limit: number; skipAccounts: ReadonlySet<string>; warmAccounts?: Iterable<string>; holds: () => boolean | Promise<boolean>; leaseNow: () => string; lookFirst?: boolean },
  ): Promise<{ taken: ActionRecord[]; deferred: boolean; more: boolean }> {
    if (options.lookFirst && (await this.#claimable(runnerId, options, this.clock.now(), options.leaseNow(), 1, false)).length === 0) return { taken: [], deferred: false, more: false };
    const { taken, deferred, more } = await this.store.transaction(
      async () => {
        const changes = { taken: [] as ActionRecord[], deferred: [] as ActionRecord[], more: false };
        if (!(await options.holds())) return changes;
        // A deferred candidate leaves the claimable set: look again, for the slot it would have had.
        for (let deferredBefore = -1; changes.deferred.length > deferredBefore && changes.taken.length < options.limit; ) {
          deferredBefore = changes.deferred.length;
          await this.#claimRound(runnerId, options, changes);
        }
        for (const action of [...changes.deferred, ...changes.taken]) this.announce(action);
        return changes;
      },
      { locksRows: true },
    );
    return { taken, deferred: deferred.length > 0, more };
  }

  /** One pass over the claimable candidates: each taken, or deferred by its pace. */
  async #claimRound(
    runnerId: string,
    options: { limit: number; skipAccounts: ReadonlySet<string>; warmAccounts?: Iterable<string>; leaseNow: () => string },
    changes: { taken: ActionRecord[]; deferred: ActionRecord[]; more: boolean },
  ): Promise<void> {
    const clockNow = this.clock.now();
    const now = clockNow.toISOString();
    const leaseNow = options.leaseNow();
    const wanted = options.limit - changes.taken.length;
    const found = await this.#claimable(runnerId, options, clockNow, leaseNow, wanted + 1, true);
    // The one past the limit is only looked at (its row lock ends with this transaction).
    changes.more = found.length > wanted;
    const candidates = found.slice(0, wanted);
    const notBefore = await this.pacing.notBefore(candidates, clockNow);
    const startable: string[] = [];
    for (const { action } of candidates) {
      const until = notBefore.get(action.id);
      if (until === undefined) {
        startable.push(action.id);
        continue;
      }
      const deferred = await this.store.actions.defer(action.id, until.toISOString(), now);
      if (!deferred) continue;
      await recordActionEvent(this.store, action.id, now);
      changes.deferred.push(deferred);
    }
    const taken = await this.store.actions.take(startable, runnerId, now, leaseNow);
    await recordClaimEvents(this.store, taken, now);
    changes.taken.push(...taken);
  }

  /** What `runnerId` may claim at `clockNow` (`leaseNow` on the lease clock), up to `limit` (`actions.claimable`; `lock`: inside the claim's transaction). */
  #claimable(runnerId: string, options: { skipAccounts: ReadonlySet<string>; warmAccounts?: Iterable<string> }, clockNow: Date, leaseNow: string, limit: number, lock: boolean) {
    return this.store.actions.claimable(clockNow.toISOString(), {
      runnerId,
      leaseNow,
      skipAccounts: [...options.skipAccounts],
      warmAccounts: [...(options.warmAccounts ?? [])].filter((accountId) => !options.skipAccounts.has(accountId)),
      passOverSince: new Date(clockNow.getTime() - PASS_OVER_MS).toISOString(),
      preferWarmSince: new Date(clockNow.getTime() - PREFER_WARM_MS).toISOString(),
      limit,
      lock,
    });
  }

  /**
   * Holds the account for an owner's sign-in page (DESIGN §3: one writer per browser context) on
   * behalf of `runnerId`, until `expiresAt` or its runner's lease ends, whichever is first: no
   * coordinator claims its actions meanwhile. False while an action of the account runs or waits,
   * or another live hold has it. A claim at the same moment either commits first (and the account
   * is then busy) or waits for this one and passes the account over.
   */
  async holdAccount(accountId: string, runnerId: string, lease: { now: string; expiresAt: string }): Promise<boolean> {
    return this.store.transaction(
      async () => {
        await this.store.accountHolds.lockAgainstClaims(accountId);
        if (await this.store.actions.hasActive(accountId)) return false;
        return this.store.accountHolds.take({ account_id: accountId, runner_id: runnerId, expires_at: lease.expiresAt, created_at: lease.now }, lease.now);
      },
      { locksRows: true },
    );
  }

  /** Gives up `runnerId`'s hold on the account: its queued actions may be claimed again. */
  async releaseAccount(accountId: string, runnerId: string): Promise<void> {
    await this.store.accountHolds.release(accountId, runnerId);
  }

  /**
   * Moves a non-terminal action to `to` (not an ending: use `finish`). Returns false if it had
   * already moved on, or `guard` (checked in the same transaction) refuses.
   */
  async move(actionId: string, from: readonly ActionStatus[], to: ActionStatus, changes: { runner_id?: string; answered_by?: AnsweredBy } = {}, guard?: Guard): Promise<boolean> {
    const moved = await this.store.transaction(async () => {
      const action = await this.store.actions.lockForWrite(actionId);
      if (!action || !from.includes(action.status) || (guard && !(await guard(action)))) return false;
      const now = this.now();
      await this.store.actions.update(actionId, { status: transition(action.status, to), ...changes }, now);
      await recordActionEvent(this.store, actionId, now);
      await this.emit(actionId);
      return true;
    }, ACTION_ROW_LOCKED);
    return moved;
  }

  /**
   * The run answered a challenge itself (a stored TOTP secret's code, a message the inbox already
   * held), without pausing: the action says who gave the answer, its status unchanged, with its
   * event. Call inside the run's fenced transaction.
   */
  async answered(actionId: string, by: AnsweredBy): Promise<void> {
    const now = this.now();
    await this.store.actions.update(actionId, { answered_by: by }, now);
    await recordActionEvent(this.store, actionId, now);
    await this.emit(actionId);
  }

  /**
   * Puts an action whose process died back in the queue (before its commit point, so nothing
   * was done on the platform): its run starts over, a challenge it waited on is closed and the
   * next run asks afresh. The price stays held. False when it had moved on meanwhile.
   */
  async requeue(actionId: string, from: readonly ActionStatus[], guard?: Guard): Promise<boolean> {
    const requeued = await this.store.transaction(async () => {
      const action = await this.store.actions.lockForWrite(actionId);
      if (!action || !from.includes(action.status) || action.committed_at || (guard && !(await guard(action)))) return false;
      const now = this.now();
      await this.store.actions.update(actionId, { status: transition(action.status, "queued"), runner_id: undefined }, now);
      const challenge = await this.store.challenges.latestOf(actionId);
      if (challenge && (challenge.state === "open" || challenge.state === "answered")) await this.store.challenges.update(challenge.id, { state: "canceled" }, now);
      await recordActionEvent(this.store, actionId, now);
      await this.emit(actionId);
      return true;
    }, ACTION_ROW_LOCKED);
    return requeued;
  }

  /**
   * Ends an action: status, error or result, credits captured or released, open
   * challenge closed. A no-op (returns false) when the action has already ended.
   */
  async finish(actionId: string, outcome: Outcome, guard?: Guard): Promise<boolean> {
    const finished = await this.store.transaction(async () => {
      const action = await this.store.actions.lockForWrite(actionId);
      if (!action || isTerminal(action.status) || (guard && !(await guard(action)))) return false;
      const now = this.now();
      const code = outcome.status === "failed" ? outcome.code : undefined;
      const freeBeforeCommit = outcome.status === "failed" && outcome.freeBeforeCommit === true && !action.committed_at;
      const charged = action.held && !freeBeforeCommit && isCharged(outcome.status, code, action.type);
      if (action.held && !charged) {
        await this.store.ledger.append({ workspace_id: action.workspace_id, kind: "release", amount: action.price, action_id: action.id, created_at: now });
      }
      await this.store.actions.update(
        actionId,
        {
          status: transition(action.status, outcome.status),
          // A failed action has no result: its column keeps the error's details (decisions: "Failure details").
          ...(outcome.status === "succeeded" ? { result: outcome.result } : outcome.status === "failed" && outcome.details ? { result: { error_details: outcome.details } } : {}),
          ...(code ? { error_code: code, error_message: (outcome.status === "failed" && outcome.message) || ACTION_ERRORS[code].message } : {}),
          cost: charged ? action.price : 0,
          held: false,
          finished_at: now,
        },
        now,
      );
      const challenge = await this.store.challenges.latestOf(actionId);
      if (challenge && (challenge.state === "open" || challenge.state === "answered")) {
        await this.store.challenges.update(challenge.id, { state: code === "challenge_timeout" ? "expired" : CHALLENGE_END[outcome.status] }, now);
      }
      let heldBack: string[] = [];
      if (outcome.status !== "canceled") {
        const failure = outcome.status === "failed" ? { code: outcome.code, message: outcome.message, retryAfterSeconds: outcome.retryAfterSeconds } : {};
        await recordAccountOutcome(this.store, action, failure, now);
        heldBack = await recordPaceOutcome(this.store, action, failure, this.clock.now());
      }
      for (const id of heldBack) await recordActionEvent(this.store, id, now);
      // Secret params are kept only while the action may still run (DESIGN §14).
      if (mayHoldSecrets(action.type, action.params)) await this.store.routines.dropSecretParams(actionId);
      // A browser that never started is not a final answer: the same key may run it again.
      if (code === "browser_unavailable") await this.store.idempotency.forgetAction(actionId);
      // Read once, after every write of this transaction: its event and its announcement.
      const ended = await this.store.actions.get(actionId);
      if (ended) {
        await recordActionEvent(this.store, actionId, now, ended);
        this.announce(ended);
      }
      for (const id of heldBack) await this.emit(id);
      return true;
    }, ACTION_ROW_LOCKED);
    return finished;
  }
}

/**
 * How a transaction that starts by locking its action's row (`actions.lockForWrite`) runs: at
 * READ COMMITTED on PostgreSQL (docs/decisions.md, "The run's writes lock their rows"). Every other
 * writer of the action waits for that lock; what else it reads and writes is locked too (the
 * account's row) or written conditionally, so SERIALIZABLE's retries would buy nothing.
 */
export const ACTION_ROW_LOCKED = { locksRows: true } as const;

/**
 * What tells two records of an action apart: its status with the time it was changed. The time
 * alone is not enough: two changes can carry the same millisecond (two machines, or one clock that
 * has not moved), and a wait would miss the second.
 */
export function changeKey(action: ActionRecord): string {
  return `${action.status}@${action.updated_at}`;
}

/** A record of one action among all this process is committing: another action's change may carry the same status and time. */
function committingKey(action: ActionRecord): string {
  return `${action.id} ${changeKey(action)}`;
}
