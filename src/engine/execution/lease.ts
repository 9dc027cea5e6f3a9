import { hostname } from "node:os";
import type { Store } from "../../store/index.js";
import type { Clock } from "../clock.js";
import { newId } from "../ids.js";
import type { Logger } from "../logger.js";

export interface LeaseOptions {
  store: Store;
  logger: Logger;
  /** What process this is (`serve`, `mcp`, …), for the runners table. */
  kind: string;
  /** Leases are wall-clock time between processes: never a test's fake clock. */
  clock: Clock;
  leaseMs: number;
  /** Where this process serves live links, to people and to other coordinators (read at each renewal: known only once listening). */
  publicUrl: () => string;
  internalUrl: () => string;
  /** The lease was lost: what this process held is recovery's now. */
  onLost: (lostId: string) => void;
}

/**
 * A runner's registration in the store (DESIGN §11): an id, and a lease renewed by heartbeat.
 * A lease that expired before it was renewed (the process stalled, the database was unreachable)
 * is never taken back: the runner registers again under a new id, and whatever it held under the
 * old one is recovery's.
 */
export class Lease {
  #id = newId("run");

  constructor(private readonly options: LeaseOptions) {}

  get id(): string {
    return this.#id;
  }

  get now(): string {
    return this.options.clock.now().toISOString();
  }

  #until(): string {
    return new Date(this.options.clock.now().getTime() + this.options.leaseMs).toISOString();
  }

  async register(): Promise<void> {
    await this.options.store.runners.register({
      id: this.#id,
      kind: this.options.kind,
      host: hostname(),
      pid: process.pid,
      public_url: this.options.publicUrl(),
      internal_url: this.options.internalUrl(),
      started_at: this.now,
      lease_expires_at: this.#until(),
    });
  }

  /** Renews the lease now (and says where live links are served); a lease already lost is given up. */
  async renew(): Promise<void> {
    const renewed = await this.options.store.runners.renew(this.#id, this.now, this.#until(), { public_url: this.options.publicUrl(), internal_url: this.options.internalUrl() });
    if (renewed) return;
    const lost = this.#id;
    this.options.logger.error({ runner_id: lost }, "lease lost: giving up this runner's actions to recovery");
    this.#id = newId("run");
    this.options.onLost(lost);
    await this.register();
  }

  /** Whether the lease `id` names holds now (checked inside the transaction of a fenced write). */
  holds(id: string): Promise<boolean> {
    return this.options.store.runners.isLive(id, this.now);
  }

  async end(): Promise<void> {
    await this.options.store.runners.expire(this.#id, this.now);
  }
}
