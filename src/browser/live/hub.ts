import type { Page } from "playwright";
import type { LiveTarget } from "../../engine/live-links.js";
import type { Logger } from "../../engine/logger.js";
import type { Driver } from "../../platforms/driver.js";
import type { BrowserExecutor } from "../executor.js";
import type { BrowserPool } from "../pool.js";
import { Screencast } from "./screencast.js";

export interface LiveHubOptions {
  pool: BrowserPool;
  executor: BrowserExecutor;
  drivers: readonly Driver[];
  baseUrls: Readonly<Record<string, string>>;
  logger: Logger;
  /** Called once an owner has signed in by hand, with the context's storage state. */
  onSignedIn(linkId: string, accountId: string, storageState: string): void;
}

interface SignInSession {
  page: Page;
  done: Promise<boolean>;
}

/**
 * Finds the page behind a live link and shares one screencast per page: the running
 * action's page for a challenge, or a sign-in page opened in the account's own
 * context for an owner sign-in link.
 */
export class LiveHub {
  readonly #casts = new WeakMap<Page, Screencast>();
  readonly #signIns = new Map<string, SignInSession>();

  constructor(private readonly options: LiveHubOptions) {}

  /** The page of the target, or undefined when there is none any more (the action moved on). */
  async pageFor(target: LiveTarget): Promise<Page | undefined> {
    if (target.kind === "challenge") return this.options.executor.pages.get(target.action.id);
    if (target.link.state === "completed") return undefined;
    return (await this.#signIn(target)).page;
  }

  screencast(page: Page): Screencast {
    let cast = this.#casts.get(page);
    if (!cast) {
      cast = new Screencast(page);
      this.#casts.set(page, cast);
      page.once("close", () => void cast!.stop());
    }
    return cast;
  }

  #signIn(target: Extract<LiveTarget, { kind: "sign_in" }>): Promise<SignInSession> {
    const existing = this.#signIns.get(target.link.id);
    if (existing) return Promise.resolve(existing);
    return this.#openSignIn(target);
  }

  async #openSignIn(target: Extract<LiveTarget, { kind: "sign_in" }>): Promise<SignInSession> {
    const { pool, drivers, baseUrls, logger } = this.options;
    const { account, link } = target;
    const driver = drivers.find((candidate) => candidate.platform.name === account.platform);
    const baseUrl = baseUrls[account.platform];
    if (!driver || !baseUrl) throw new Error(`No driver for platform ${account.platform}`);
    const context = await pool.acquire(account.id, () => undefined);
    const page = await context.newPage();
    const remaining = Math.max(1_000, Date.parse(target.expiresAt) - Date.now());
    const done = (async () => {
      try {
        await page.goto(baseUrl + driver.manualSignIn.path);
        await driver.manualSignIn.signedIn(page).waitFor({ state: "visible", timeout: remaining });
        this.options.onSignedIn(link.id, account.id, JSON.stringify(await context.storageState()));
        return true;
      } catch (error) {
        logger.info({ err: error, account_id: account.id }, "owner sign-in page ended without signing in");
        return false;
      } finally {
        await page.close().catch(() => undefined);
        pool.release(account.id);
        this.#signIns.delete(link.id);
      }
    })();
    const session = { page, done };
    this.#signIns.set(link.id, session);
    return session;
  }
}
