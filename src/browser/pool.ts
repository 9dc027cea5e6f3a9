import type { Browser, BrowserContext, Page } from "playwright";
import { ActionFailure } from "../domain/errors.js";
import type { Logger } from "../engine/logger.js";
import type { EndpointSpec } from "./endpoint-spec.js";
import { KeptPages } from "./kept-pages.js";

export interface PoolOptions {
  executablePath?: string | undefined;
  /** Remote browsers (DESIGN §8); none: one Chromium started by this process. */
  endpoints?: readonly EndpointSpec[];
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
  logger: Logger;
  /** Seam for tests: how the browser of an endpoint is started. */
  launch?: (spec: EndpointSpec) => Promise<Browser>;
  /** Browser viewport for every context. */
  viewport?: { width: number; height: number };
  /** An endpoint that failed is tried again after this long (default 5 s). */
  retryAfterMs?: number;
}

interface Endpoint {
  spec: EndpointSpec;
  browser: Promise<Browser> | undefined;
  /** Until when this endpoint is not offered new contexts (it failed to connect or died). */
  downUntil: number;
  contexts: number;
}

interface Slot {
  endpoint: Endpoint;
  context: BrowserContext;
  busy: boolean;
  lastUsed: number;
  idleTimer: NodeJS.Timeout | undefined;
}

/** How long the pool must have run nothing before it opens the spare context and page. */
const SPARE_AFTER_IDLE_MS = 1_000;

interface Spare {
  endpoint: Endpoint;
  context: BrowserContext;
  page: Page;
}

type StorageState = Exclude<Exclude<Parameters<Browser["newContext"]>[0], undefined>["storageState"], undefined>;

/**
 * One BrowserContext per account, on one browser or a fleet (DESIGN §8). A new context goes
 * to the healthy endpoint with the fewest contexts, and the account stays there while its
 * context is warm. A browser that dies takes only its own contexts (their running actions
 * fail); it is connected again on a later acquire, and meanwhile the others take new work.
 */
export class BrowserPool {
  readonly #endpoints: Endpoint[];
  readonly #slots = new Map<string, Slot>();
  readonly #kept: KeptPages;
  /** The context and page opened ahead for the next new account (see #prepareSpare). */
  #spare: Promise<Spare | undefined> | undefined;
  #closed = false;
  #spareTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: PoolOptions) {
    const specs: readonly EndpointSpec[] = options.endpoints?.length ? options.endpoints : [{ kind: "local", url: "local", executablePath: options.executablePath }];
    this.#endpoints = specs.map((spec) => ({ spec, browser: undefined, downUntil: 0, contexts: 0 }));
    this.#kept = new KeptPages(options.maxPages ?? 0, options.pageIdleMs ?? 60_000);
  }

  /** The first endpoint's browser (the only one without a fleet), started on first use. */
  browser(): Promise<Browser> {
    return this.#connect(this.#endpoints[0]!);
  }

  #connect(endpoint: Endpoint): Promise<Browser> {
    endpoint.browser ??= (this.options.launch ?? launchOrConnect)(endpoint.spec).then(
      (browser) => {
        endpoint.downUntil = 0;
        browser.on("disconnected", () => this.#lost(endpoint, browser));
        return browser;
      },
      (error: unknown) => {
        endpoint.browser = undefined;
        endpoint.downUntil = Date.now() + (this.options.retryAfterMs ?? 5_000);
        this.options.logger.error({ err: error, endpoint: describe(endpoint.spec) }, "browser could not be started or reached");
        throw error;
      },
    );
    return endpoint.browser;
  }

  /** A browser went away: its contexts are gone; the next acquire connects again or goes elsewhere. */
  #lost(endpoint: Endpoint, browser: Browser): void {
    this.options.logger.warn({ endpoint: describe(endpoint.spec) }, "browser disconnected; its accounts move to the next healthy browser");
    void endpoint.browser?.then((current) => {
      if (current === browser) endpoint.browser = undefined;
    });
    endpoint.downUntil = this.#endpoints.length > 1 ? Date.now() + (this.options.retryAfterMs ?? 5_000) : 0;
    for (const [accountId, slot] of this.#slots) {
      if (slot.endpoint !== endpoint) continue;
      clearTimeout(slot.idleTimer);
      this.#kept.take(accountId);
      this.#slots.delete(accountId);
    }
    endpoint.contexts = 0;
  }

  /** Healthy endpoints first, the least loaded first; the ones that are down last (in case all are). */
  #candidates(): Endpoint[] {
    const now = Date.now();
    return [...this.#endpoints].sort((a, b) => Number(a.downUntil > now) - Number(b.downUntil > now) || a.contexts - b.contexts);
  }

  /**
   * The account's context (restored from its saved storage state when new), marked busy.
   * `browser_unavailable` when no endpoint can give one.
   */
  async acquire(accountId: string, storageState: () => string | undefined): Promise<BrowserContext> {
    let slot = this.#slots.get(accountId);
    if (!slot) {
      slot = await this.#open(accountId, storageState());
      this.#slots.set(accountId, slot);
    }
    clearTimeout(slot.idleTimer);
    slot.busy = true;
    slot.lastUsed = Date.now();
    await this.#evictIdle();
    return slot.context;
  }

  async #open(accountId: string, saved: string | undefined): Promise<Slot> {
    const spare = await this.#takeSpare(saved);
    if (spare) {
      // Its page is the account's first kept page: the action runs in the renderer already started.
      this.#kept.keep(accountId, spare.page);
      return this.#slotFor(accountId, spare.endpoint, spare.context);
    }
    let lastError: unknown;
    for (const endpoint of this.#candidates()) {
      try {
        const browser = await this.#connect(endpoint);
        const context = await browser.newContext({
          viewport: this.#viewport(),
          ...(saved ? { storageState: JSON.parse(saved) as StorageState } : {}),
        });
        return this.#slotFor(accountId, endpoint, context);
      } catch (error) {
        lastError = error;
      }
    }
    const cause = lastError instanceof Error ? lastError.message.split("\n")[0] : String(lastError);
    throw new ActionFailure("browser_unavailable", `No browser could be started or reached (${cause}); nothing is charged.`);
  }

  #slotFor(accountId: string, endpoint: Endpoint, context: BrowserContext): Slot {
    endpoint.contexts += 1;
    const slot: Slot = { endpoint, context, busy: false, lastUsed: Date.now(), idleTimer: undefined };
    context.on("close", () => {
      if (this.#slots.get(accountId)?.context === context) this.#slots.delete(accountId);
      endpoint.contexts = Math.max(0, endpoint.contexts - 1);
    });
    return slot;
  }

  #viewport(): { width: number; height: number } {
    return this.options.viewport ?? { width: 1280, height: 800 };
  }

  /**
   * Opens, once nothing has run for a moment, the context and page the next account without a warm context
   * will take (when pages are kept at all): a new page is a new renderer process, the slowest
   * part of an action on a cold account, and a context takes its saved state afterwards.
   */
  #prepareSpare(): void {
    if (this.#spare || this.#closed || (this.options.maxPages ?? 0) <= 0) return;
    const spare = (async (): Promise<Spare | undefined> => {
      const endpoint = this.#candidates()[0];
      if (!endpoint || endpoint.downUntil > Date.now()) return undefined;
      const context = await (await this.#connect(endpoint)).newContext({ viewport: this.#viewport() });
      try {
        return { endpoint, context, page: await context.newPage() };
      } catch (error) {
        await context.close().catch(() => undefined);
        throw error;
      }
    })().catch((error: unknown) => {
      this.options.logger.debug({ err: error }, "spare page could not be opened");
      return undefined;
    });
    this.#spare = spare;
  }

  /** The spare, with the account's saved state set in it; undefined when there is none or it is unusable. */
  async #takeSpare(saved: string | undefined): Promise<Spare | undefined> {
    const pending = this.#spare;
    this.#spare = undefined;
    const spare = await pending;
    if (!spare) return undefined;
    try {
      if (spare.endpoint.downUntil > Date.now() || spare.page.isClosed()) throw new Error("the spare's browser went away");
      if (saved) await spare.context.setStorageState(JSON.parse(saved) as StorageState);
      return spare;
    } catch {
      await spare.context.close().catch(() => undefined);
      return undefined;
    }
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
    slot.busy = false;
    slot.lastUsed = Date.now();
    slot.idleTimer = setTimeout(() => void this.forget(accountId), this.options.idleMs);
    slot.idleTimer.unref();
    // Once nothing has run for a moment: its renderer starting must not slow the actions running.
    clearTimeout(this.#spareTimer);
    this.#spareTimer = setTimeout(() => {
      if (![...this.#slots.values()].some((other) => other.busy)) this.#prepareSpare();
    }, SPARE_AFTER_IDLE_MS);
    this.#spareTimer.unref();
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

  /** The open context of an account, if any (the live view reads it). */
  contextOf(accountId: string): BrowserContext | undefined {
    return this.#slots.get(accountId)?.context;
  }

  /** Which endpoint an account's warm context is on (`local` without a fleet). */
  placementOf(accountId: string): string | undefined {
    const slot = this.#slots.get(accountId);
    return slot && slot.endpoint.spec.url;
  }

  /** Each endpoint, whether it is up, and how many contexts it holds. */
  status(): { url: string; kind: EndpointSpec["kind"]; up: boolean; contexts: number }[] {
    const now = Date.now();
    return this.#endpoints.map((endpoint) => ({ url: endpoint.spec.url, kind: endpoint.spec.kind, up: endpoint.downUntil <= now, contexts: endpoint.contexts }));
  }

  get size(): number {
    return this.#slots.size;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#spareTimer);
    const spare = await this.#spare;
    this.#spare = undefined;
    await spare?.context.close().catch(() => undefined);
    for (const accountId of [...this.#slots.keys()]) await this.forget(accountId);
    for (const endpoint of this.#endpoints) {
      const browser = await endpoint.browser?.catch(() => undefined);
      endpoint.browser = undefined;
      // A remote browser is someone else's: only the connection is closed.
      await browser?.close().catch(() => undefined);
    }
  }
}

/** Playwright is loaded with the first browser, not at start-up (it is half of a start's module loading). */
async function launchOrConnect(spec: EndpointSpec): Promise<Browser> {
  const { connectEndpoint } = await import("./endpoints.js");
  return connectEndpoint(spec);
}

/** Loads what the first browser needs ahead of it, once the service is up. */
export function preloadBrowser(): void {
  void import("./endpoints.js").catch(() => undefined);
}

/** An endpoint for logs: its URL without credentials or query (a token may sit there). */
function describe(spec: EndpointSpec): string {
  if (spec.kind === "local") return "local";
  try {
    const url = new URL(spec.url.replace(/^cdp\+/i, ""));
    return `${spec.kind}:${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return spec.kind;
  }
}
