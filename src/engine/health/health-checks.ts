import { AppError } from "../../domain/errors.js";
import { CHECK_TYPE } from "../../domain/health.js";
import type { Principal } from "../../domain/keys.js";
import type { AccountRecord } from "../../store/records.js";
import { requirePermission, visibleAccount } from "../access/index.js";
import type { EngineCore } from "../core.js";
import { every } from "../housekeeping.js";
import { newId } from "../ids.js";

export interface HealthCheckOptions {
  /** `ACTION_SERVICE_HEALTH_CHECK_MINUTES`: each connected account is checked once in this many minutes; 0 = off. */
  intervalMinutes: number;
  /** How often due checks are looked for (tests shorten it). */
  tickMs?: number;
}

/** Due checks are looked for this often. */
const TICK_MS = 5_000;
/**
 * A look that found nothing due: the next is at least this much later (at most a tenth of the
 * interval). Checks are spread over an hour; a minute late is nothing to them, and an idle
 * coordinator does not ask every tick (DESIGN §11: at most one statement a second when idle).
 */
const QUIET_MS = 60_000;
/** After checks that could not find out, the wait doubles, up to a day. */
const MAX_BACKOFF_MS = 24 * 60 * 60 * 1000;

/**
 * Health checks (DESIGN §16): each connected account not used within the interval gets a check —
 * the driver's start page read as signed in or out, a sign-in again when no person is needed — run
 * as the engine's own action of type `check`, so it is claimed, fenced and recovered like one,
 * after whatever the account runs, and only in run slots no action wants. They are spread over the
 * interval (each tick starts at most the interval's share of the connected accounts), free, never
 * listed, and what they find is the account's status (`account.updated`).
 */
export class HealthChecks {
  #timer: NodeJS.Timeout | undefined;
  /** Before this (ms on the engine's clock), a look finds nothing due without asking: the last found nothing. */
  #quietUntil = 0;

  constructor(
    private readonly core: EngineCore,
    private readonly options: HealthCheckOptions,
  ) {}

  get intervalMs(): number {
    return this.options.intervalMinutes * 60_000;
  }

  start(): void {
    if (this.options.intervalMinutes <= 0) return;
    this.#timer = every(this.options.tickMs ?? TICK_MS, "health check schedule", this.core.logger, () => this.scheduleDue());
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /**
   * `POST /v1/accounts/{id}/check`, MCP `check_account`: a check now (after the account's running
   * action, if any); free. An account never signed in has nothing to check.
   */
  async checkNow(principal: Principal, accountId: string): Promise<AccountRecord> {
    requirePermission(principal, "act");
    const { store, lifecycle } = this.core;
    const account = await visibleAccount(store, principal, accountId);
    if (account.status === "new") {
      throw new AppError("conflict", "The account has never signed in: there is no session to check. Connect it first (an action of type connect).", { status: account.status });
    }
    await store.transaction(async () => {
      if (!(await store.actions.hasOpenCheck(account.id))) await this.#enqueue(account, lifecycle.now(), { requested: true });
    });
    this.core.runner.pump();
    return account;
  }

  /**
   * Queues the checks due now, as many as the run slots left idle and the interval's share allow
   * (so a thousand accounts connected at once are checked over the interval, not at its start).
   */
  async scheduleDue(): Promise<number> {
    const { store, lifecycle, runner } = this.core;
    const idle = runner.idleSlots;
    if (idle <= 0) return 0;
    const now = lifecycle.clock.now().getTime();
    if (now < this.#quietUntil) return 0;
    const share = Math.ceil(((await store.accounts.countConnected()) * (this.options.tickMs ?? TICK_MS)) / this.intervalMs);
    const due = await store.accounts.dueForCheck(new Date(now - this.intervalMs).toISOString(), new Date(now).toISOString(), Math.min(idle, Math.max(1, share)));
    if (due.length === 0) this.#quietUntil = now + Math.min(QUIET_MS, this.intervalMs / 10);
    let queued = 0;
    for (const account of due) {
      const taken = await store.transaction(async () => {
        const failures = await store.accounts.checkFailures(account.id);
        const next = new Date(now + Math.min(this.intervalMs * 2 ** failures, MAX_BACKOFF_MS)).toISOString();
        if (!(await store.accounts.takeCheck(account.id, new Date(now).toISOString(), next))) return false;
        await this.#enqueue(account, new Date(now).toISOString());
        return true;
      });
      if (taken) queued += 1;
    }
    if (queued > 0) runner.pump();
    return queued;
  }

  async #enqueue(account: AccountRecord, now: string, params: Record<string, unknown> = {}): Promise<void> {
    await this.core.store.actions.insert({
      id: newId("act"),
      workspace_id: account.workspace_id,
      account_id: account.id,
      platform: account.platform,
      type: CHECK_TYPE,
      params,
      status: "queued",
      error_code: undefined,
      error_message: undefined,
      result: undefined,
      price: 0,
      cost: 0,
      held: false,
      runner_id: undefined,
      lease: 0,
      committed_at: undefined,
      created_at: now,
      updated_at: now,
      finished_at: undefined,
    });
  }
}
