import { chromium, type Browser, type BrowserContext } from "playwright";
import { ActionFailure } from "../domain/errors.js";
import type { Logger } from "../engine/logger.js";
import { CHROMIUM_ARGS, findChromium } from "./executable.js";

export interface PoolOptions {
  executablePath?: string | undefined;
  /** A remote Playwright browser server (`chromium.connect`). */
  wsEndpoint?: string | undefined;
  /** Close an account's context after this long unused. */
  idleMs: number;
  /** Warm contexts kept at most; the least recently used idle ones close first. */
  maxContexts: number;
  logger: Logger;
  /** Seam for tests: how the browser is started. */
  launch?: () => Promise<Browser>;
  /** Browser viewport for every context. */
  viewport?: { width: number; height: number };
}

interface Slot {
  context: BrowserContext;
  busy: boolean;
  lastUsed: number;
  idleTimer: NodeJS.Timeout | undefined;
}

/**
 * One Chromium per process and one BrowserContext per account. A crashed browser is
 * dropped and started again on the next acquire.
 */
export class BrowserPool {
  #browser: Promise<Browser> | undefined;
  readonly #slots = new Map<string, Slot>();

  constructor(private readonly options: PoolOptions) {}

  /** The shared browser, started on first use; `browser_unavailable` when it cannot start. */
  browser(): Promise<Browser> {
    this.#browser ??= this.#launch().then(
      (browser) => {
        browser.on("disconnected", () => {
          this.options.logger.warn("browser disconnected; it will be started again on the next action");
          this.#browser = undefined;
          for (const slot of this.#slots.values()) clearTimeout(slot.idleTimer);
          this.#slots.clear();
        });
        return browser;
      },
      (error: unknown) => {
        this.#browser = undefined;
        this.options.logger.error({ err: error }, "browser could not start");
        throw new ActionFailure("browser_unavailable", "No browser could be started; nothing is charged. Retry with the same Idempotency-Key.");
      },
    );
    return this.#browser;
  }

  #launch(): Promise<Browser> {
    if (this.options.launch) return this.options.launch();
    if (this.options.wsEndpoint) return chromium.connect(this.options.wsEndpoint);
    const found = findChromium(this.options.executablePath);
    if (!found) return Promise.reject(new Error("No Chromium found (BROWSER_EXECUTABLE_PATH, Playwright's download, or a system Chromium)."));
    return chromium.launch({ executablePath: found.path, args: CHROMIUM_ARGS });
  }

  /** The account's context (restored from its saved storage state when new), marked busy. */
  async acquire(accountId: string, storageState: () => string | undefined): Promise<BrowserContext> {
    const browser = await this.browser();
    let slot = this.#slots.get(accountId);
    if (!slot) {
      const saved = storageState();
      const context = await browser.newContext({
        viewport: this.options.viewport ?? { width: 1280, height: 800 },
        ...(saved ? { storageState: JSON.parse(saved) as Exclude<Parameters<Browser["newContext"]>[0], undefined>["storageState"] } : {}),
      });
      slot = { context, busy: false, lastUsed: Date.now(), idleTimer: undefined };
      context.on("close", () => {
        if (this.#slots.get(accountId)?.context === context) this.#slots.delete(accountId);
      });
      this.#slots.set(accountId, slot);
    }
    clearTimeout(slot.idleTimer);
    slot.busy = true;
    slot.lastUsed = Date.now();
    await this.#evictIdle();
    return slot.context;
  }

  /** The account is done for now: its context stays warm until idle too long. */
  release(accountId: string): void {
    const slot = this.#slots.get(accountId);
    if (!slot) return;
    slot.busy = false;
    slot.lastUsed = Date.now();
    slot.idleTimer = setTimeout(() => void this.forget(accountId), this.options.idleMs);
    slot.idleTimer.unref();
  }

  /** Closes the account's context (idle timeout, account deleted). */
  async forget(accountId: string): Promise<void> {
    const slot = this.#slots.get(accountId);
    if (!slot) return;
    clearTimeout(slot.idleTimer);
    this.#slots.delete(accountId);
    await slot.context.close().catch(() => undefined);
  }

  async #evictIdle(): Promise<void> {
    const idle = [...this.#slots.entries()].filter(([, slot]) => !slot.busy).sort(([, a], [, b]) => a.lastUsed - b.lastUsed);
    while (this.#slots.size > this.options.maxContexts && idle.length > 0) await this.forget(idle.shift()![0]);
  }

  /** The open context of an account, if any (the live view reads it). */
  contextOf(accountId: string): BrowserContext | undefined {
    return this.#slots.get(accountId)?.context;
  }

  get size(): number {
    return this.#slots.size;
  }

  async close(): Promise<void> {
    for (const accountId of [...this.#slots.keys()]) await this.forget(accountId);
    const browser = await this.#browser?.catch(() => undefined);
    this.#browser = undefined;
    await browser?.close().catch(() => undefined);
  }
}
