import type { Browser, BrowserContext, Page } from "playwright";
import type { Logger } from "../engine/logger.js";
import type { BrowserFleet, Endpoint } from "./fleet.js";

/** How long the pool must have run nothing before it opens the spare context and page. */
const SPARE_AFTER_IDLE_MS = 1_000;

/** A context and page opened ahead, and the endpoint they are on. */
export interface Spare {
  endpoint: Endpoint;
  context: BrowserContext;
  page: Page;
}

/** A saved storage state, as a new context takes it. */
export type StorageState = Exclude<Exclude<Parameters<Browser["newContext"]>[0], undefined>["storageState"], undefined>;

/**
 * The context and page the next account without a warm context will take, opened once nothing
 * has run for a moment (when pages are kept at all): a new page is a new renderer process, the
 * slowest part of an action on a cold account, and a context takes its saved state afterwards.
 */
export class SpareContext {
  #spare: Promise<Spare | undefined> | undefined;
  #closed = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly fleet: BrowserFleet,
    private readonly options: { enabled: boolean; viewport: { width: number; height: number }; logger: Logger },
  ) {}

  /** Opens the spare after a moment, if nothing runs then: its renderer starting must not slow the actions running. */
  prepareWhenIdle(nothingRuns: () => boolean): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      if (nothingRuns()) this.#prepare();
    }, SPARE_AFTER_IDLE_MS);
    this.#timer.unref();
  }

  #prepare(): void {
    if (this.#spare || this.#closed || !this.options.enabled) return;
    const spare = (async (): Promise<Spare | undefined> => {
      const endpoint = this.fleet.candidates()[0];
      if (!endpoint || endpoint.downUntil > Date.now()) return undefined;
      const context = await (await this.fleet.connect(endpoint)).newContext({ viewport: this.options.viewport });
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
  async take(saved: string | undefined): Promise<Spare | undefined> {
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

  /** No spare is opened any more; the one open is closed. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    const spare = await this.#spare;
    this.#spare = undefined;
    await spare?.context.close().catch(() => undefined);
  }
}
