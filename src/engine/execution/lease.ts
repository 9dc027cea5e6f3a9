import { performance } from "node:perf_hooks";
import type { Store, WorkDue } from "../../store/index.js";
import { DatabaseClock, type Clock } from "../clock.js";
import { newId } from "../ids.js";
import type { Logger } from "../logger.js";
import { processIdentity } from "./process-identity.js";

export interface LeaseOptions {
  store: Store;
  logger: Logger;
  /** What process this is (`serve`, `mcp`, …), for the runners table. */
  kind: string;
  /**
   * Leases are time between processes: never a test's fake clock. On PostgreSQL the database's
   * (`DatabaseClock`, set from each renewal's reading); the statements judge by it in any case.
   */
  clock: Clock;
  leaseMs: number;
  /** Where this process serves live links, to people and to other coordinators (read at each renewal: known only once listening). */
  publicUrl: () => string;
  internalUrl: () => string;
  /** Run slots free now, written with each renewal: other runners' claims wait for an account this one ran last only while it has one. */
  freeSlots?: () => number;
  /** The lease was lost, or could not be renewed in time: what this process held under it is recovery's now. */
  onLost: (lostId: string) => void;
}

/**
 * What a runner keeps of its lease's end (DESIGN §11 self-fencing): it stops its runs this share of
 * the lease before the lease would end by its own count. A fifth (3 s of 15) covers the driver's
 * stop after the abort and a database clock reading's error, which is milliseconds.
 */
export const SELF_FENCE_MARGIN = 0.2;

/**
 * A runner's registration in the store (DESIGN §11): an id, and a lease renewed by heartbeat.
 * A lease that expired before it was renewed (the process stalled, the database was unreachable)
 * is never taken back: the runner registers again under a new id, and whatever it held under the
 * old one is recovery's. The runner does not wait to learn that from the database: counted on the
 * monotonic clock from the start of the last renewal that succeeded, a lease not renewed by a
 * margin before its end is given up here first (`onLost`), and nothing more is written under it.
 */
export class Lease {
  #id = newId("run");
  /** `performance.now()` past which this process writes nothing under `#id` (its lease may have ended). */
  #holdsUntil = 0;
  #fenceTimer: NodeJS.Timeout | undefined;
  /** The lease was given up here (not renewed in time): the next renewal registers a new one. */
  #givenUp = false;

  constructor(private readonly options: LeaseOptions) {}

  get id(): string {
    return this.#id;
  }

  get now(): string {
    return this.options.clock.now().toISOString();
  }

  /** Reads the database's clock now, when leases are judged by it (`DatabaseClock`). */
  async readClock(): Promise<void> {
    const { clock, store } = this.options;
    if (!(clock instanceof DatabaseClock)) return;
    const started = performance.now();
    const now = await store.runners.now(this.now);
    clock.calibrate(now, started, performance.now());
  }

  async register(): Promise<void> {
    const { store, leaseMs } = this.options;
    const started = performance.now();
    const now = await store.runners.register(
      { id: this.#id, kind: this.options.kind, host: processIdentity(), pid: process.pid, public_url: this.options.publicUrl(), internal_url: this.options.internalUrl(), free_slots: this.#freeSlots() },
      { now: this.now, leaseMs },
    );
    this.#renewed(started, now);
  }

  /**
   * Renews the lease now (and says where live links are served); a lease already lost is given up.
   * Returns what the heartbeat may have to do, read with the renewal; undefined when it did not renew.
   */
  async renew(): Promise<WorkDue | undefined> {
    if (this.#givenUp) return this.#registerAgain();
    const { store, leaseMs } = this.options;
    const id = this.#id;
    const started = performance.now();
    const renewed = await store.runners.renew(id, { now: this.now, leaseMs }, { public_url: this.options.publicUrl(), internal_url: this.options.internalUrl(), free_slots: this.#freeSlots() });
    // Given up while the renewal was on its way: its runs are stopped already, whatever it found.
    if (this.#givenUp || id !== this.#id) return this.#registerAgain();
    if (renewed !== undefined) {
      this.#renewed(started, renewed.now);
      return renewed.due;
    }
    this.options.logger.error({ runner_id: id }, "lease lost: giving up this runner's actions to recovery");
    this.#giveUp();
    return this.#registerAgain();
  }

  /** Whether the lease `id` names holds now (checked inside the transaction of a fenced write). */
  async holds(id: string): Promise<boolean> {
    if (id === this.#id && !this.#heldHere()) {
      this.#notRenewedInTime();
      return false;
    }
    return this.options.store.runners.isLive(id, this.now);
  }

  /**
   * Whether this process may still write under the lease `id` by its own count (self-fencing), with
   * no statement: for a write whose statement checks the lease in the database itself (a claim's take).
   */
  holdsHere(id: string): boolean {
    if (id === this.#id && this.#heldHere()) return true;
    if (id === this.#id) this.#notRenewedInTime();
    return false;
  }

  #freeSlots(): number {
    return Math.max(0, this.options.freeSlots?.() ?? 0);
  }

  async end(): Promise<void> {
    clearTimeout(this.#fenceTimer);
    await this.options.store.runners.expire(this.#id, this.now);
  }

  /** Stops the self-fencing timer (the runner stopped). */
  stop(): void {
    clearTimeout(this.#fenceTimer);
  }

  #heldHere(): boolean {
    return !this.#givenUp && performance.now() < this.#holdsUntil;
  }

  /**
   * A renewal (or registration) asked at `started` succeeded: the database's lease runs `leaseMs`
   * from a moment after `started`, so counted from `started` this process stops first.
   */
  #renewed(started: number, databaseNow: string): void {
    const { clock, leaseMs } = this.options;
    if (clock instanceof DatabaseClock) clock.calibrate(databaseNow, started, performance.now());
    this.#holdsUntil = started + leaseMs * (1 - SELF_FENCE_MARGIN);
    this.#armFence();
  }

  /**
   * Gives the lease up at `#holdsUntil` unless a renewal moves it. Node's timers count whole
   * milliseconds of the event loop's time and often fire a fraction of one before
   * `performance.now()` reaches their end: one that finds the lease still held sets itself again.
   */
  #armFence(): void {
    clearTimeout(this.#fenceTimer);
    this.#fenceTimer = setTimeout(() => {
      if (this.#givenUp) return;
      if (this.#heldHere()) this.#armFence();
      else this.#notRenewedInTime();
    }, Math.max(0, this.#holdsUntil - performance.now()) + 1);
    this.#fenceTimer.unref();
  }

  #notRenewedInTime(): void {
    if (this.#givenUp || this.#heldHere()) return;
    this.options.logger.error(
      { runner_id: this.#id },
      "lease not renewed in time (the database did not answer): this runner's runs stop and write nothing more; their actions are recovery's once the lease ends",
    );
    this.#giveUp();
  }

  #giveUp(): void {
    clearTimeout(this.#fenceTimer);
    this.#givenUp = true;
    this.options.onLost(this.#id);
  }

  /**
   * A new lease under a new id. The old one is ended first, in case a renewal extended it after it
   * was given up here: its runs write nothing more, so recovery may take its actions at once.
   */
  async #registerAgain(): Promise<undefined> {
    const old = this.#id;
    this.#id = newId("run");
    await this.options.store.runners.expire(old, this.now);
    await this.register();
    this.#givenUp = false;
    return undefined;
  }
}
