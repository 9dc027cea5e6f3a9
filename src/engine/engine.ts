import { HealthChecks, type HealthCheckOptions } from "./health/index.js";
import type { Principal } from "../domain/keys.js";
import type { PlatformReference, PublicAccount, PublicAction } from "../domain/public.js";
import { isTerminal } from "../domain/status.js";
import type { Store } from "../store/index.js";
import type { AccountRecord, ActionRecord, LedgerEntry } from "../store/records.js";
import { X402_VARIABLES, type X402Config } from "../config.js";
import { EventFeed, Feedback, Webhooks, type WebhookOptions } from "../events/index.js";
import { TopUps } from "../payments/top-ups.js";
import { ClientTokens, Keys, WebSessions, canSee, requirePermission, visibleAction } from "./access/index.js";
import { Accounts, LiveLinks } from "./accounts/index.js";
import * as actions from "./actions.js";
import { DatabaseClock, systemClock, type Clock } from "./clock.js";
import type { EngineCore } from "./core.js";
import { ChangesElsewhere, Lifecycle, Pacing, Runner, platformReference, type ActionExecutor, type Interest, type PlatformInfo, type RunnerOptions } from "./execution/index.js";
import { DeadlineSweep, PURGE_INTERVAL_MS, every, expireOverdueChallenges, purgeExpired } from "./housekeeping.js";
import { createActionOnce, settleAbandoned } from "./idempotency.js";
import { Inbox, type InboxOptions } from "./inbox/index.js";
import { silentLogger, type Logger } from "./logger.js";
import { presentAccount, type Surface } from "./present/index.js";
import { Routines } from "./routines/index.js";

export interface EngineOptions {
  store: Store;
  executor: ActionExecutor;
  platforms: readonly PlatformInfo[];
  publicUrl: string;
  /** Where the other coordinators reach this one (`ACTION_SERVICE_INTERNAL_URL`); the public URL when unset. */
  internalUrl?: string;
  clock?: Clock;
  /** The source of pacing's jitter (0 ≤ r < 1); tests pin it. */
  random?: () => number;
  logger?: Logger;
  challengeTtlSeconds?: number;
  maxConcurrent?: number;
  /** Actions holding a page at needs_input at once (`ACTION_SERVICE_MAX_PAUSED_ACTIONS`). */
  maxPaused?: number;
  /** Runner settings: its kind (`serve`, `mcp`, …) and lease timings (tests shorten them). */
  runner?: Pick<RunnerOptions, "kind" | "leaseMs" | "heartbeatMs" | "stopGraceMs">;
  freeCredits?: number;
  /** x402 top-ups (DESIGN §7); absent: not configured (top-ups answer 503 naming the variables). */
  x402?: X402Config;
  /** How often the earliest known challenge deadline is compared with the clock, in ms (a statement only once one has passed). */
  sweepIntervalMs?: number;
  /** Webhook delivery (DESIGN §13): private targets allowed or not (default not), and how often due deliveries are looked for. */
  webhooks?: WebhookOptions;
  /** The inbox (DESIGN §15): its mail domain, and whether the SMTP listener is on. Default `inbox.localhost`, off. */
  inbox?: InboxOptions;
  /** Health checks (DESIGN §16): every `intervalMinutes` (default 60; 0 = off). */
  healthChecks?: HealthCheckOptions;
}

/** The action lifecycle behind both REST and MCP. */
export class Engine {
  readonly core: EngineCore;
  /** Status changes other processes make, announced here as this process's own are. */
  readonly #elsewhere: ChangesElsewhere;
  readonly topUps: TopUps;
  /** The platform accounts a workspace connects. */
  readonly accounts: Accounts;
  /** Live links: sign-in pages and challenge pages. */
  readonly live: LiveLinks;
  /** API keys, and who a key is. */
  readonly keys: Keys;
  /** Web app sessions (DESIGN §12). */
  readonly webSessions: WebSessions;
  /** Values sealed for a client to hand back (`access/client-tokens.ts`). */
  readonly clientTokens: ClientTokens;
  /** Webhook endpoints and their delivery (DESIGN §13). */
  readonly webhooks: Webhooks;
  /** The workspace's events as they commit (SSE). */
  readonly events: EventFeed;
  readonly feedback: Feedback;
  /** Routines an agent saved, run as the routine action type (DESIGN §14). */
  readonly routines: Routines;
  /** Each account's inbox: messages that answer its e-mail and text challenges (DESIGN §15). */
  readonly inbox: Inbox;
  /** Health checks of connected accounts (DESIGN §16). */
  readonly healthChecks: HealthChecks;
  readonly #endedJson = new WeakMap<ActionRecord, string>();
  readonly #deadlines: DeadlineSweep;
  #stopDeadlineWatch: (() => void) | undefined;
  #purge: NodeJS.Timeout | undefined;

  constructor(private readonly options: EngineOptions) {
    // On PostgreSQL every expiry and deadline is judged by the database's clock (DESIGN §11), read through the lease's renewals.
    const databaseClock = options.store.dialect === "postgres" ? new DatabaseClock() : undefined;
    const clock = options.clock ?? databaseClock ?? systemClock;
    const logger = options.logger ?? silentLogger;
    const lifecycle = new Lifecycle(options.store, clock, new Pacing(options.store, options.platforms, options.random));
    const runner = new Runner({
      lifecycle,
      executor: options.executor,
      logger,
      challengeTtlMs: (options.challengeTtlSeconds ?? 600) * 1000,
      maxConcurrent: options.maxConcurrent ?? 4,
      maxPaused: options.maxPaused ?? 200,
      leaseClock: databaseClock ?? systemClock,
      ...options.runner,
      publicUrl: () => this.core.publicUrl,
      internalUrl: () => this.core.internalUrl,
      inbox: { mayAnswer: (accountId, kind) => this.inbox.mayAnswer(accountId, kind), answerAtHand: (action, challenge) => this.inbox.answerAtHand(action, challenge) },
      // What the lease's renewal found due: a dead process's requests in flight will never answer
      // (settle them, and finish its payments); a challenge's deadline; a webhook delivery's attempt.
      onHeartbeat: (due) => {
        if (due.abandonedKeys) settleAbandoned(this.core).catch((error: unknown) => logger.warn({ err: error }, "could not settle a dead process's requests; the next heartbeat tries again"));
        if (due.paymentsInFlight) this.topUps.reconcileInBackground();
        this.#deadlines.learn(due.nextDeadline);
        this.webhooks.dueAt(due.nextDelivery);
      },
    });
    this.core = {
      store: options.store,
      lifecycle,
      runner,
      executor: options.executor,
      platforms: options.platforms,
      publicUrl: options.publicUrl,
      internalUrl: options.internalUrl ?? options.publicUrl,
      logger,
      freeCredits: options.freeCredits ?? 100,
    };
    this.accounts = new Accounts(this.core);
    this.live = new LiveLinks(this.core);
    this.keys = new Keys(this.core);
    this.webSessions = new WebSessions(this.core);
    this.clientTokens = new ClientTokens(options.store);
    this.webhooks = new Webhooks(this.core, options.webhooks);
    this.events = new EventFeed(this.core);
    this.feedback = new Feedback(this.core);
    this.routines = new Routines(this.core);
    this.inbox = new Inbox(this.core, options.inbox ?? { mailDomain: "inbox.localhost", smtpOn: false });
    this.healthChecks = new HealthChecks(this.core, options.healthChecks ?? { intervalMinutes: 60 });
    // Its runs are followed wherever they change: an answer or a cancel elsewhere still reaches its metrics here.
    this.#elsewhere = new ChangesElsewhere(options.store, this.core.lifecycle, (actionId, runnerId) => runner.isRunning(actionId) || (runnerId !== undefined && runnerId === runner.runnerId));
    this.#deadlines = new DeadlineSweep(this.core, options.sweepIntervalMs ?? 500);
    this.topUps = new TopUps(this.core, options.x402 ?? { settings: undefined, missing: [...X402_VARIABLES], maxCredits: 100_000, timeoutMs: 30_000 });
  }

  /**
   * Where this process serves live links, to people and to other coordinators, once known (port 0
   * is chosen when listening); resolves once the runners table says so.
   */
  async setUrls(urls: { publicUrl?: string | undefined; internalUrl?: string | undefined }): Promise<void> {
    if (urls.publicUrl) {
      this.core.publicUrl = urls.publicUrl;
      this.webhooks.setPublicUrl(urls.publicUrl);
    }
    if (urls.internalUrl) this.core.internalUrl = urls.internalUrl;
    await this.core.runner.renew().catch((error: unknown) => this.core.logger.warn({ err: error }, "could not renew the lease; the next heartbeat does"));
  }

  /** An account's public JSON for this key: with its inbox's addresses when the key may see them (DESIGN §15). */
  async presentAccount(principal: Principal, account: AccountRecord): Promise<PublicAccount> {
    const inbox = await this.inbox.addressesFor(principal, account);
    return presentAccount(account, { ...(inbox ? { inbox } : {}), pace: this.core.lifecycle.pacing.pacesOf(account) });
  }

  get store(): Store {
    return this.core.store;
  }

  /**
   * Deadlines first (a challenge that expired while no process ran stays expired), then the
   * runner: its lease, recovery of what dead runners left (DESIGN §3, §11), the queue.
   */
  async start(): Promise<void> {
    // On PostgreSQL, the database's clock is read before the first deadline is judged by it.
    await this.core.runner.readClock();
    await this.expireOverdueChallenges();
    await this.core.runner.start();
    await purgeExpired(this.core);
    // Payments a crashed process left between verify and settle: settled (credited once) or failed.
    this.topUps.reconcileInBackground();
    // An action paused at a challenge: its deadline is the sweep's to watch.
    const onPause = (action: ActionRecord): void => {
      if (action.status === "needs_input") this.#deadlines.refresh().catch((error: unknown) => this.core.logger.warn({ err: error }, "could not read the next challenge deadline; the next heartbeat does"));
    };
    this.core.lifecycle.events.on("change", onPause);
    this.#stopDeadlineWatch = () => this.core.lifecycle.events.off("change", onPause);
    this.#deadlines.start();
    await this.#deadlines.refresh();
    this.#purge = every(PURGE_INTERVAL_MS, "purge", this.core.logger, () => purgeExpired(this.core));
    this.webhooks.start();
    await this.#elsewhere.start();
    this.healthChecks.start();
  }

  async stop(): Promise<void> {
    this.healthChecks.stop();
    this.#elsewhere.stop();
    this.#stopDeadlineWatch?.();
    this.#deadlines.stop();
    clearInterval(this.#purge);
    await this.webhooks.stop();
    await this.core.runner.stop();
    await this.core.executor.close?.();
  }

  /**
   * Fails every `needs_input` action whose deadline has passed (with `challenge_timeout`)
   * and stops its run. Returns how many expired.
   */
  expireOverdueChallenges(): Promise<number> {
    return expireOverdueChallenges(this.core);
  }

  // Actions
  createAction(principal: Principal, input: actions.CreateAction): Promise<ActionRecord> {
    return actions.createAction(this.core, principal, input);
  }
  getAction(principal: Principal, actionId: string): Promise<ActionRecord> {
    requirePermission(principal, "read");
    return visibleAction(this.core.store, principal, actionId);
  }
  /** Whether `principal` may read `action` (its workspace, an account its key may act on), without throwing. */
  mayRead(principal: Principal, action: ActionRecord): boolean {
    return canSee(principal, action);
  }
  listActions(principal: Principal, query: actions.ListActions): Promise<{ data: ActionRecord[]; next_cursor?: string }> {
    return actions.listActions(this.core, principal, query);
  }
  /** `by`: `agent` through the API or MCP, `person` in the web app or the live page. */
  answer(principal: Principal, actionId: string, answer: string, by: "agent" | "person" = "agent"): Promise<ActionRecord> {
    return actions.answerAction(this.core, principal, actionId, answer, by);
  }
  cancel(principal: Principal, actionId: string): Promise<ActionRecord> {
    return actions.cancelAction(this.core, principal, actionId);
  }
  waitFor(actionId: string, seconds: number, signal?: AbortSignal): Promise<ActionRecord> {
    return actions.waitForAction(this.core, actionId, seconds, signal);
  }
  /** The public JSON of an action, its `next_step` in the operations of the surface reading it. */
  present(action: ActionRecord, surface: Surface = "rest"): Promise<PublicAction> {
    return actions.present(this.core, action, surface);
  }

  /**
   * An ended action's REST JSON text, kept with the record: it depends on the record alone, and
   * the store hands out the same record until the action changes (a client polling it is served
   * without presenting and serializing it again).
   */
  async presentEnded(action: ActionRecord): Promise<string> {
    let json = this.#endedJson.get(action);
    if (json === undefined) {
      json = JSON.stringify(await this.present(action));
      if (isTerminal(action.status)) this.#endedJson.set(action, json);
    }
    return json;
  }
  /**
   * Calls `listener` with every status change made here, and with other processes' changes of what
   * `follows` names (an action, a workspace's actions) or this process runs (on SQLite, every
   * change); returns the unsubscribe function.
   */
  onChange(listener: (action: ActionRecord) => void, follows?: Interest): () => void {
    const { lifecycle } = this.core;
    lifecycle.events.on("change", listener);
    const unfollow = follows ? lifecycle.follows.follow(follows) : () => undefined;
    return () => {
      lifecycle.events.off("change", listener);
      unfollow();
    };
  }

  /** Other processes' changes of `interest` are read and announced here (`onChange`) until the returned function is called. */
  follow(interest: Interest): () => void {
    return this.core.lifecycle.follows.follow(interest);
  }
  /** Idempotency-Key: one action per key and request body; a replay is checked like any request (engine/idempotency.ts). */
  createActionOnce(
    principal: Principal,
    key: string,
    input: actions.CreateAction,
    respond: (action: ActionRecord) => Promise<ActionRecord> = async (action) => action,
  ): Promise<{ action: ActionRecord; replayed: boolean }> {
    return createActionOnce(this.core, principal, key, input, respond);
  }

  // Credits and platforms
  balance(principal: Principal): Promise<number> {
    requirePermission(principal, "read");
    return this.core.store.ledger.balance(principal.workspaceId);
  }

  /** The workspace's credit ledger, newest first, a page at a time (`before`: the last `seq` seen). */
  async ledger(principal: Principal, options: { limit: number; before?: number | undefined }): Promise<(LedgerEntry & { transaction?: string })[]> {
    requirePermission(principal, "read");
    const { store } = this.core;
    const entries = await store.ledger.newest(principal.workspaceId, options.limit, options.before);
    return Promise.all(
      entries.map(async (entry) => {
        // A top-up names its settlement on chain, where the payer can find it.
        const payment = entry.kind === "top_up" && entry.reference?.startsWith("x402:") ? await store.payments.get(entry.reference.slice(5)) : undefined;
        return payment?.transaction_hash ? { ...entry, transaction: payment.transaction_hash } : entry;
      }),
    );
  }

  /** The action reference: platforms, their action types, params schemas and prices. */
  platforms(): PlatformReference[] {
    return platformReference(this.core.platforms);
  }

}
