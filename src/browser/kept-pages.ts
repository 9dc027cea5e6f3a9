import type { Page } from "playwright";

/**
 * Pages kept open between an account's actions (a kept page spares the next action a new
 * renderer process), at most `max`: the least recently kept close first, and each closes after
 * `idleMs` unused. The map's order is the order they were kept in.
 */
export class KeptPages {
  readonly #pages = new Map<string, { page: Page; timer: NodeJS.Timeout }>();
  readonly #watched = new WeakSet<Page>();

  constructor(
    private readonly max: number,
    private readonly idleMs: number,
  ) {}

  get size(): number {
    return this.#pages.size;
  }

  /** Keeps `page` for the account (closing the one it had); false when no page is kept, and the caller closes it. */
  keep(accountId: string, page: Page): boolean {
    if (this.max <= 0 || page.isClosed()) return false;
    this.close(accountId);
    for (const oldest of this.#pages.keys()) {
      if (this.#pages.size < this.max) break;
      this.close(oldest);
    }
    const timer = setTimeout(() => this.close(accountId), this.idleMs);
    timer.unref();
    this.#pages.set(accountId, { page, timer });
    // Once per page, however often it is kept: a page closed under it (its context, its browser) is no longer kept.
    if (!this.#watched.has(page)) {
      this.#watched.add(page);
      page.once("close", () => {
        if (this.#pages.get(accountId)?.page === page) this.take(accountId);
      });
    }
    return true;
  }

  /** The account's kept page, no longer kept (it is the caller's to use or close); undefined when none is open. */
  take(accountId: string): Page | undefined {
    const kept = this.#pages.get(accountId);
    if (!kept) return undefined;
    clearTimeout(kept.timer);
    this.#pages.delete(accountId);
    return kept.page.isClosed() ? undefined : kept.page;
  }

  /** Closes the account's kept page, if any. */
  close(accountId: string): void {
    void this.take(accountId)
      ?.close()
      .catch(() => undefined);
  }
}
