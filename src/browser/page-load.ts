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
  /** The last sign of the platform answering the page now arriving (its document's response, a part of it). */
  #heardAt: number | undefined;
  /** Whether the navigation in flight has had its response: the requests after it are the new document's parts. */
  #answered = false;
  /** A `load` seen while a navigation's request was still finishing (its events may come in either order). */
  #loadSeen = false;
  #loadedAt = performance.now();
  #changed: (() => void)[] = [];

  private constructor(private readonly page: Page) {
    page.on("request", (request) => {
      if (!this.#isNavigation(request)) return;
      this.#navigations.add(request);
      this.#arrivingSince ??= performance.now();
      this.#heardAt = performance.now();
      this.#answered = false;
      this.#loadSeen = false;
      this.#notify();
    });
    page.on("response", (response) => this.#heard(response.request()));
    page.on("requestfinished", (request) => {
      this.#heard(request);
      this.#navigationEnded(request, false);
    });
    page.on("requestfailed", (request) => this.#navigationEnded(request, true));
    page.on("load", () => {
      if (this.#navigations.size > 0) this.#loadSeen = true;
      else this.#loaded();
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

  /**
   * While the page arrives, the last time the platform was heard from about it (performance.now()):
   * the navigation asked for, its response, each part of the new document answered. A platform
   * that keeps answering is slow, not silent; the page timeout counts from here.
   */
  get heardAt(): number | undefined {
    return this.#arrivingSince === undefined ? undefined : this.#heardAt;
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
   * Whether the page is still arriving, asked once more of the page itself before it is called too
   * slow: a navigation answered without a new document (204, a download) ends with no `load`.
   */
  async stillArriving(): Promise<boolean> {
    if (this.#arrivingSince === undefined) return false;
    await this.#caughtUp();
    if (this.#navigations.size > 0) return true;
    const state = await this.page.evaluate(() => document.readyState).catch(() => "loading");
    if (state !== "complete" || this.#navigations.size > 0) return this.#arrivingSince !== undefined;
    this.#loaded();
    return false;
  }

  /**
   * Resolves once every event the browser sent before now has been seen here: a round trip to the
   * browser, whose answer comes after them on the same connection. A process that was not run for
   * a while (a stalled machine, a blocked event loop) wakes to its timers before the events that
   * piled up meanwhile; without this, a page that arrived in that time would be judged as it was.
   * Bounded: a browser that does not answer leaves the page as last seen.
   */
  async #caughtUp(): Promise<void> {
    const answered = this.page
      .context()
      .cookies(ROUND_TRIP_URL)
      .then(() => undefined, () => undefined);
    await Promise.race([answered, new Promise<void>((resolve) => setTimeout(resolve, ROUND_TRIP_LIMIT_MS).unref())]);
  }

  /** A request of the page answered (headers in, or all of it): the navigation's own, or a part of the document it brought. */
  #heard(request: Request): void {
    if (this.#arrivingSince === undefined) return;
    if (this.#navigations.has(request)) this.#answered = true;
    else if (!this.#answered) return; // the previous document's, still finishing: not this page's answer
    this.#heardAt = performance.now();
  }

  /**
   * A navigation's response is in, or it failed (another replaced it, the network refused it). Once
   * none is left: a failed one leaves the page as it was; a finished one's document is loaded when
   * its `load` came first, else its `load` is still to come.
   */
  #navigationEnded(request: Request, failed: boolean): void {
    if (!this.#navigations.delete(request) || this.#navigations.size > 0) return;
    if (failed || this.#loadSeen) this.#loaded();
  }

  #loaded(): void {
    this.#arrivingSince = undefined;
    this.#loadSeen = false;
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

/** Asked of the browser only for its answer's place on the connection: no cookie is ever set for it. */
const ROUND_TRIP_URL = "https://round-trip.invalid/";
const ROUND_TRIP_LIMIT_MS = 5_000;
