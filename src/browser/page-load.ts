import type { Page, Request } from "playwright";

/**
 * Where a page is in its arrival (DESIGN §3, "slow is not broken"): a main-frame navigation asked
 * for and its document not yet loaded is *arriving*; once loaded, it is what the platform sent and
 * may be judged. Read from Playwright's events, so a page held by a slow platform or a starved
 * renderer is told from a page that shows something else. One watch per page, for its whole life
 * (a kept page carries it to the account's next action).
 */
export class PageLoad {
  /** Main-frame navigation requests in flight (a form sent, a link followed, `goto`). */
  readonly #navigations = new Set<Request>();
  #arrivingSince: number | undefined;
  #loadedAt = performance.now();
  #changed: (() => void)[] = [];

  private constructor(private readonly page: Page) {
    page.on("request", (request) => {
      if (!this.#isNavigation(request)) return;
      this.#navigations.add(request);
      this.#arrivingSince ??= performance.now();
      this.#notify();
    });
    page.on("requestfinished", (request) => this.#navigationEnded(request));
    page.on("requestfailed", (request) => this.#navigationEnded(request));
    page.on("load", () => {
      if (this.#navigations.size > 0) return;
      this.#loaded();
    });
  }

  static of(page: Page): PageLoad {
    let watch = watches.get(page);
    if (!watch) watches.set(page, (watch = new PageLoad(page)));
    return watch;
  }

  /** When the page began arriving (performance.now()), or undefined when it has loaded. */
  get arrivingSince(): number | undefined {
    return this.#arrivingSince;
  }

  /** When the page last finished loading (performance.now()). */
  get loadedAt(): number {
    return this.#loadedAt;
  }

  /** Resolves at the next change: a navigation begun, or a page loaded. */
  nextChange(): Promise<void> {
    return new Promise((resolve) => this.#changed.push(resolve));
  }

  #isNavigation(request: Request): boolean {
    try {
      return request.isNavigationRequest() && request.frame() === this.page.mainFrame();
    } catch {
      // A service worker's request has no frame.
      return false;
    }
  }

  /**
   * A navigation's response is in (or it failed, or another replaced it). Its document's `load` may
   * have been seen first; a response without a document (204, a download) or a failed request
   * leaves the page as it was: loaded.
   */
  #navigationEnded(request: Request): void {
    if (!this.#navigations.delete(request) || this.#navigations.size > 0) return;
    void this.page
      .evaluate(() => document.readyState)
      .then(
        (state) => {
          if (state === "complete" && this.#navigations.size === 0) this.#loaded();
        },
        () => undefined,
      );
  }

  #loaded(): void {
    this.#arrivingSince = undefined;
    this.#loadedAt = performance.now();
    this.#notify();
  }

  #notify(): void {
    const waiting = this.#changed;
    this.#changed = [];
    for (const resolve of waiting) resolve();
  }
}

const watches = new WeakMap<Page, PageLoad>();
