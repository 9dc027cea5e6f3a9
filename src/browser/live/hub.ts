import { EventEmitter } from "node:events";
import type { Page } from "playwright";
import type { LiveTarget } from "../../engine/accounts/index.js";
import type { Logger } from "../../engine/logger.js";
import type { Driver } from "../../platforms/driver.js";
import { blockHosts, type BrowserExecutor } from "../executor.js";
import { isSameUser, wrongUserMessage } from "../identity.js";
import type { BrowserPool } from "../pool.js";
import { Screencast } from "./screencast.js";

/** How long the sign-in page may take to show it signed out again (a page's time, as an action's pages get; DESIGN §3). */
const SIGNED_OUT_WAIT_MS = 30_000;

export interface LiveHubOptions {
  pool: BrowserPool;
  executor: BrowserExecutor;
  drivers: readonly Driver[];
  baseUrls: Readonly<Record<string, string>>;
  logger: Logger;
  /** Called once an owner has signed in by hand as the account's user, with the context's storage state. */
  onSignedIn(linkId: string, accountId: string, storageState: string): Promise<void>;
  /**
   * Takes the account's browser context for a sign-in page (DESIGN §3: a sign-in page and
   * an action never drive one context at once); false while an action runs or waits on it.
   */
  holdAccount(accountId: string): Promise<boolean>;
  releaseAccount(accountId: string): void;
  /** A sign-in page nobody has watched for this long is closed (default 30 s). */
  unwatchedMs?: number;
  /** Sign-in pages one API key may keep open (default 3); opening another closes its oldest. */
  maxPagesPerKey?: number;
}

/** An owner sign-in page: one per account at most, closed when nobody has watched it for a while. */
export interface SignInSession {
  linkId: string;
  accountId: string;
  keyId: string | undefined;
  page: Page;
  openedAt: number;
  viewers: number;
  unwatched: NodeJS.Timeout | undefined;
  /** `notice`: something the owner must read (e.g. signed in as the wrong user). */
  events: EventEmitter<{ notice: [message: string] }>;
  close(): Promise<void>;
}

/** Why no page can be shown for a live link right now. */
export type NoPage = { reason: "busy" | "gone"; message: string };

const BUSY: NoPage = { reason: "busy", message: "An action is running on this account right now; open this link again once it has finished." };
const GONE: NoPage = { reason: "gone", message: "There is no page to show any more." };

/**
 * Finds the page behind a live link and shares one screencast per page: the running
 * action's page for a challenge, or a sign-in page opened in the account's own
 * context for an owner sign-in link.
 */
export class LiveHub {
  readonly #casts = new WeakMap<Page, Screencast>();
  readonly #signIns = new Map<string, SignInSession>();
  readonly #opening = new Map<string, Promise<SignInSession | NoPage>>();
  /** How many times each account's hold here was lost with a lease: a page being opened meanwhile is not kept. */
  readonly #holdsLost = new Map<string, number>();

  constructor(private readonly options: LiveHubOptions) {}

  /** Open sign-in pages (for tests and shutdown). */
  get signInPages(): number {
    return this.#signIns.size;
  }

  /** The page of the target, or why there is none (the action moved on; an action holds the account). */
  async pageFor(target: LiveTarget): Promise<Page | NoPage> {
    if (target.kind === "challenge") return this.options.executor.pages.get(target.action.id) ?? GONE;
    if (target.link.state === "completed") return GONE;
    const session = await this.signInSession(target);
    return "page" in session ? session.page : session;
  }

  /** The sign-in page of an owner link, opened on first use. */
  signInSession(target: Extract<LiveTarget, { kind: "sign_in" }>): Promise<SignInSession | NoPage> {
    const existing = this.#signIns.get(target.link.id);
    if (existing) return Promise.resolve(existing);
    let opening = this.#opening.get(target.link.id);
    if (!opening) {
      opening = this.#openSignIn(target).finally(() => this.#opening.delete(target.link.id));
      this.#opening.set(target.link.id, opening);
    }
    return opening;
  }

  /** A viewer started watching: the page stays open. */
  watch(session: SignInSession): void {
    session.viewers += 1;
    clearTimeout(session.unwatched);
    session.unwatched = undefined;
  }

  /** A viewer left: once nobody has watched for a while, the page closes and the account is free again. */
  unwatch(session: SignInSession): void {
    session.viewers = Math.max(0, session.viewers - 1);
    if (session.viewers > 0 || session.unwatched) return;
    session.unwatched = setTimeout(() => void session.close(), this.options.unwatchedMs ?? 30_000);
    session.unwatched.unref();
  }

  screencast(page: Page): Screencast {
    let cast = this.#casts.get(page);
    if (!cast) {
      cast = new Screencast(page);
      this.#casts.set(page, cast);
      page.once("close", () => void cast!.stop().catch(() => undefined));
    }
    return cast;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#signIns.values()].map((session) => session.close()));
  }

  /**
   * Closes the sign-in pages of these accounts, and with them their live views: their holds ended
   * with this coordinator's lease (DESIGN §11), and another coordinator may open its own page now.
   */
  async closeSignIns(accountIds: readonly string[]): Promise<void> {
    const lost = new Set(accountIds);
    for (const accountId of lost) this.#holdsLost.set(accountId, (this.#holdsLost.get(accountId) ?? 0) + 1);
    await Promise.all([...this.#signIns.values()].filter((session) => lost.has(session.accountId)).map((session) => session.close()));
  }

  async #openSignIn(target: Extract<LiveTarget, { kind: "sign_in" }>): Promise<SignInSession | NoPage> {
    const { pool, drivers, baseUrls } = this.options;
    const { account, link } = target;
    const driver = drivers.find((candidate) => candidate.platform.name === account.platform);
    const baseUrl = baseUrls[account.platform];
    if (!driver || !baseUrl) throw new Error(`No driver for platform ${account.platform}`);
    // One sign-in page per account: a newer link replaces an older one's page.
    await Promise.all([...this.#signIns.values()].filter((other) => other.accountId === account.id).map((other) => other.close()));
    await this.#makeRoomForKey(link.key_id);
    const holdsLostBefore = this.#holdsLost.get(account.id);
    if (!(await this.options.holdAccount(account.id))) return BUSY;
    let page: Page | undefined;
    try {
      const context = await pool.acquire(account.id, () => undefined);
      page = pool.takePage(account.id) ?? (await context.newPage());
      await blockHosts(page, driver);
      // The first navigation swaps the blank page's renderer: a screencast started before it dies with it.
      await page.goto(baseUrl + driver.manualSignIn.path, { waitUntil: "domcontentloaded" });
    } catch (error) {
      await page?.close().catch(() => undefined);
      pool.release(account.id);
      this.options.releaseAccount(account.id);
      throw error;
    }
    // The hold was lost with the lease while the page opened: it is not this coordinator's to show.
    if (this.#holdsLost.get(account.id) !== holdsLostBefore) {
      await page.close().catch(() => undefined);
      pool.release(account.id);
      this.options.releaseAccount(account.id);
      return GONE;
    }
    const opened = page;
    let closed: Promise<void> | undefined;
    const session: SignInSession = {
      linkId: link.id,
      accountId: account.id,
      keyId: link.key_id,
      page: opened,
      openedAt: Date.now(),
      viewers: 0,
      unwatched: undefined,
      events: new EventEmitter(),
      close: () =>
        (closed ??= (async () => {
          clearTimeout(session.unwatched);
          this.#signIns.delete(link.id);
          await opened.close().catch(() => undefined);
          pool.release(account.id);
          this.options.releaseAccount(account.id);
        })()),
    };
    this.#signIns.set(link.id, session);
    void this.#awaitSignIn(session, target, driver, baseUrl);
    return session;
  }

  /** Waits on the page until the account's own user is signed in; another user's session is cleared, never kept. */
  async #awaitSignIn(session: SignInSession, target: Extract<LiveTarget, { kind: "sign_in" }>, driver: Driver, baseUrl: string): Promise<void> {
    const { page } = session;
    const { account, link } = target;
    try {
      for (;;) {
        const remaining = Date.parse(target.expiresAt) - Date.now();
        await driver.manualSignIn.signedIn(page).waitFor({ state: "visible", timeout: Math.max(1_000, remaining) });
        const shown = await driver.signedInAs(page);
        if (isSameUser(shown, account.username)) break;
        await page.context().clearCookies();
        session.events.emit("notice", `${wrongUserMessage(shown, account.username)} Sign in as @${account.username}.`);
        await page.goto(baseUrl + driver.manualSignIn.path);
        await driver.manualSignIn.signedIn(page).waitFor({ state: "hidden", timeout: SIGNED_OUT_WAIT_MS });
      }
      await this.options.onSignedIn(link.id, account.id, JSON.stringify(await page.context().storageState()));
    } catch (error) {
      this.options.logger.info({ err: error, account_id: account.id }, "owner sign-in page ended without signing in");
    } finally {
      await session.close();
    }
  }

  /** Keeps a key's open sign-in pages under its bound: its oldest close first. */
  async #makeRoomForKey(keyId: string | undefined): Promise<void> {
    if (keyId === undefined) return;
    const own = [...this.#signIns.values()].filter((session) => session.keyId === keyId).sort((a, b) => a.openedAt - b.openedAt);
    const excess = own.length - (this.options.maxPagesPerKey ?? 3) + 1;
    await Promise.all(own.slice(0, Math.max(0, excess)).map((session) => session.close()));
  }
}
