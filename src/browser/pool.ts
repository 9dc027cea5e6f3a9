import type { Browser, BrowserContext, Page } from "playwright";
import { ActionFailure } from "../domain/errors.js";
import { BrowserFleet, endpointName, type Endpoint, type EndpointStatus, type FleetOptions } from "./fleet.js";
import { KeptPages } from "./kept-pages.js";
import { SpareContext, type StorageState } from "./spare-context.js";

export { preloadBrowser } from "./fleet.js";

export interface PoolOptions extends FleetOptions {
  /** Close an account's context after this long unused. */
  idleMs: number;
  /** Idle warm contexts kept at most (contexts in use are not counted); the least recently used close first. */
  maxContexts: number;
  /**
   * Pages kept open between an account's actions, at most (0: every action opens a page of its
   * own); the least recently kept close first. A kept page spares the next action a new renderer.
   */
  maxPages?: number;
  /** A kept page closes after this long unused (its context stays warm). */
  pageIdleMs?: number;
  /** Browser viewport for every context. */
  viewport?: { width: number; height: number };
}

/** What one endpoint holds for this process's accounts. */
export interface EndpointUsage {
  endpoint: string;
  contexts: number;
  pages: number;
}

interface Slot {
  endpoint: Endpoint;
  context: BrowserContext;
  busy: boolean;
  /** Opened for a brief use (`acquire`'s `brief`): closed at release. */
  brief: boolean;
  lastUsed: number;
  idleTimer: NodeJS.Timeout | undefined;
}

/**
 * One BrowserContext per account, on one browser or a fleet (DESIGN §8). A new context goes
 * to the healthy endpoint with the fewest contexts, and the account stays there while its
 * context is warm. A browser that dies takes only its own contexts (their running actions
 * fail); it is connected again on a later acquire, and meanwhile the others take new work.
 */
export class BrowserPool {
  readonly #fleet: BrowserFleet;
  readonly #slots = new Map<string, Slot>();
  readonly #kept: KeptPages;
  /** The context and page opened ahead for the next new account. */
  readonly #spare: SpareContext;
  readonly #viewport: { width: number; height: number };

  constructor(private readonly options: PoolOptions) {
    this.#fleet = new BrowserFleet(options, (endpoint) => this.#lost(endpoint));
    this.#kept = new KeptPages(options.maxPages ?? 0, options.pageIdleMs ?? 60_000);
    this.#viewport = options.viewport ?? { width: 1280, height: 800 };
    this.#spare = new SpareContext(this.#fleet, { enabled: (options.maxPages ?? 0) > 0, viewport: this.#viewport, logger: options.logger });
  }

  /** The first endpoint's browser (the only one without a fleet), started on first use. */
  browser(): Promise<Browser> {
    return this.#fleet.browser();
  }

  /** An endpoint's browser went away, and its contexts with it. */
  #lost(endpoint: Endpoint): void {
    for (const [accountId, slot] of this.#slots) {
      if (slot.endpoint !== endpoint) continue;
      clearTimeout(slot.idleTimer);
      this.#kept.take(accountId);
      this.#slots.delete(accountId);
    }
  }

  /**
   * The account's context (restored from its saved storage state when new), marked busy.
   * `browser_unavailable` when no endpoint can give one. A `brief` use (a health check)
   * of an account with no warm context gets one that closes at `release`: it takes neither the
   * spare context nor a place among the warm ones, so checking idle accounts never makes the
   * accounts that act cold.
   */
  async acquire(accountId: string, storageState: () => string | undefined, options: { brief?: boolean } = {}): Promise<BrowserContext> {
    let slot = this.#slots.get(accountId);
    if (!slot) {
      slot = options.brief ? await this.#openOwn(accountId, storageState(), true) : await this.#open(accountId, storageState());
      this.#slots.set(accountId, slot);
    } else if (!options.brief) {
      slot.brief = false;
    }
    clearTimeout(slot.idleTimer);
    slot.busy = true;
    slot.lastUsed = Date.now();
    await this.#evictIdle();
    return slot.context;
  }

  async #open(accountId: string, saved: string | undefined): Promise<Slot> {
    const spare = await this.#spare.take(saved);
    if (spare) {
      // Its page is the account's first kept page: the action runs in the renderer already started.
      this.#kept.keep(accountId, spare.page);
      return this.#slotFor(accountId, spare.endpoint, spare.context);
    }
    return this.#openOwn(accountId, saved, false);
  }

  /** A new context on the first endpoint that answers. */
  async #openOwn(accountId: string, saved: string | undefined, brief: boolean): Promise<Slot> {
    let lastError: unknown;
    for (const endpoint of this.#fleet.candidates()) {
      try {
        const browser = await this.#fleet.connect(endpoint);
        const context = await browser.newContext({
          viewport: this.#viewport,
          ...(saved ? { storageState: JSON.parse(saved) as StorageState } : {}),
        });
        return this.#slotFor(accountId, endpoint, context, brief);
      } catch (error) {
        lastError = error;
      }
    }
    const cause = lastError instanceof Error ? lastError.message.split("\n")[0] : String(lastError);
    throw new ActionFailure("browser_unavailable", `No browser could be started or reached (${cause}); nothing is charged.`);
  }

  #slotFor(accountId: string, endpoint: Endpoint, context: BrowserContext, brief = false): Slot {
    endpoint.contexts += 1;
    const slot: Slot = { endpoint, context, busy: false, brief, lastUsed: Date.now(), idleTimer: undefined };
    context.on("close", () => {
      if (this.#slots.get(accountId)?.context === context) this.#slots.delete(accountId);
      endpoint.contexts = Math.max(0, endpoint.contexts - 1);
    });
    return slot;
  }

  /**
   * The page the account's last action left open, taken for this one (undefined: open a new
   * page). Call between `acquire` and `release`.
   */
  takePage(accountId: string): Page | undefined {
    return this.#kept.take(accountId);
  }

  /**
   * Keeps an action's page open for the account's next action, within `maxPages` (the least
   * recently kept page of another account closes to make room); false when pages are not kept,
   * and the caller closes it. Call before `release`.
   */
  keepPage(accountId: string, page: Page): boolean {
    const slot = this.#slots.get(accountId);
    return slot !== undefined && page.context() === slot.context && this.#kept.keep(accountId, page);
  }

  /** Pages kept open between actions now. */
  get keptPages(): number {
    return this.#kept.size;
  }

  /** The account is done for now: its context stays warm until idle too long. */
  release(accountId: string): void {
    const slot = this.#slots.get(accountId);
    if (!slot) return;
    if (slot.brief) {
      void this.forget(accountId);
      return;
    }
    slot.busy = false;
    slot.lastUsed = Date.now();
    slot.idleTimer = setTimeout(() => void this.forget(accountId), this.options.idleMs);
    slot.idleTimer.unref();
    this.#spare.prepareWhenIdle(() => ![...this.#slots.values()].some((other) => other.busy));
  }

  /** Closes the account's context (idle timeout, account deleted). */
  async forget(accountId: string): Promise<void> {
    const slot = this.#slots.get(accountId);
    if (!slot) return;
    clearTimeout(slot.idleTimer);
    this.#kept.take(accountId);
    this.#slots.delete(accountId);
    await slot.context.close().catch(() => undefined);
  }

  /**
   * Closes the least recently used idle contexts beyond `maxContexts` idle ones. Contexts in use
   * (running, or holding a page at needs_input) are never counted nor closed; each candidate is
   * checked again when its turn comes, since an account may have taken its context meanwhile.
   */
  async #evictIdle(): Promise<void> {
    const idle = [...this.#slots.entries()].filter(([, slot]) => !slot.busy).sort(([, a], [, b]) => a.lastUsed - b.lastUsed);
    let excess = idle.length - this.options.maxContexts;
    for (const [accountId, slot] of idle) {
      if (excess <= 0) break;
      if (this.#slots.get(accountId) !== slot || slot.busy) continue;
      excess -= 1;
      await this.forget(accountId);
    }
  }

  /** Whether every browser is one this process started (on this machine): a request sent from here leaves from where its pages do. */
  get browsesFromHere(): boolean {
    return this.#fleet.status().every((endpoint) => endpoint.kind === "local");
  }

  /** The open context of an account, if any (the live view reads it). */
  contextOf(accountId: string): BrowserContext | undefined {
    return this.#slots.get(accountId)?.context;
  }

  /** Accounts with a context open here that outlives its use (a health check's brief one does not): warm for their next action. */
  *warmAccounts(): Iterable<string> {
    for (const [accountId, slot] of this.#slots) if (!slot.brief) yield accountId;
  }

  /** Which endpoint an account's warm context is on (`local` without a fleet). */
  placementOf(accountId: string): string | undefined {
    const slot = this.#slots.get(accountId);
    return slot && slot.endpoint.spec.url;
  }

  /** Each endpoint, whether it is up, and how many contexts it holds. */
  status(): EndpointStatus[] {
    return this.#fleet.status();
  }

  get size(): number {
    return this.#slots.size;
  }

  /**
   * Per endpoint (named without credentials or query), the accounts' contexts open on it and
   * their open pages (kept pages and pages held at needs_input included): read from memory, for metrics.
   */
  usage(): EndpointUsage[] {
    const usage = new Map<Endpoint, EndpointUsage>();
    for (const endpoint of this.#fleet.candidates()) usage.set(endpoint, { endpoint: endpointName(endpoint.spec), contexts: 0, pages: 0 });
    for (const slot of this.#slots.values()) {
      const counted = usage.get(slot.endpoint);
      if (!counted) continue;
      counted.contexts += 1;
      counted.pages += slot.context.pages().length;
    }
    return [...usage.values()];
  }

  async close(): Promise<void> {
    await this.#spare.close();
    for (const accountId of [...this.#slots.keys()]) await this.forget(accountId);
    await this.#fleet.close();
  }
}
