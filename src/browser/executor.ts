import { EventEmitter } from "node:events";
import type { BrowserContext, Page } from "playwright";
import { ActionFailure, type ActionErrorCode } from "../domain/errors.js";
import { CHECK_TYPE } from "../domain/health.js";
import type { ActionExecutor, ExecutionContext } from "../engine/execution/index.js";
import type { Driver, DriverContext } from "../platforms/driver.js";
import { routineHandler } from "../platforms/routine.js";
import { isSameUser, WrongUserFailure } from "./identity.js";
import type { BrowserPool } from "./pool.js";
import { PageLoad } from "./page-load.js";
import { probeFromHere, probeShowsAccount, type ProbeTarget } from "./probe.js";
import { isTimeout, judgeTimeout, settle, whenVisible, type PageRule } from "./settle.js";

export interface BrowserExecutorOptions {
  pool: BrowserPool;
  drivers: readonly Driver[];
  /** Where each platform lives, by platform name (e.g. the sandbox's URL). */
  baseUrls: Readonly<Record<string, string>>;
  /** How long one platform page may take to arrive (`ACTION_SERVICE_PAGE_TIMEOUT_SECONDS`); 30 s by default. */
  pageTimeoutMs?: number;
}

const DEFAULT_PAGE_TIMEOUT_MS = 30_000;

/**
 * Runs actions in the account's browser context: restores its session, opens a page,
 * lets the driver work, saves the session back (sealed by the store) and closes the
 * page. Errors become seed codes here, never from an exception's text.
 */
export class BrowserExecutor implements ActionExecutor {
  /** Pages of running actions, by action id, for the live view. */
  readonly pages = new Map<string, Page>();
  readonly events = new EventEmitter<{ page: [actionId: string, page: Page | undefined] }>();

  constructor(private readonly options: BrowserExecutorOptions) {}

  async execute(execution: ExecutionContext): Promise<Record<string, unknown>> {
    const { action, account } = execution;
    const driver = this.options.drivers.find((candidate) => candidate.platform.name === action.platform);
    const check = action.type === CHECK_TYPE;
    const handler = action.type === CHECK_TYPE ? undefined : execution.routine && driver ? routineHandler(execution.routine, driver) : driver?.actions[action.type];
    if (!driver || (!check && !handler)) throw new ActionFailure("unsupported", `The ${action.platform} platform has no ${action.type} action.`);
    const { pool } = this.options;
    const rule = this.#ruleOf(driver);
    const saved = execution.loadSession();
    // A health check (DESIGN §16) first asks the platform without a page, where the driver says how:
    // for an account with no warm context, from this process with no browser context at all.
    const probe = check && driver.probe ? this.#probeTarget(execution, driver, rule) : undefined;
    const fromHere = probe !== undefined && saved !== undefined && !pool.contextOf(account.id) && pool.browsesFromHere;
    if (fromHere) {
      const found = await probeFromHere(saved, probe);
      if (found) {
        if (found.session) await execution.saveSession(found.session);
        return { outcome: "connected" };
      }
    }
    // A check of an idle account does not warm it (its context closes when the check ends).
    const context = await pool.acquire(account.id, () => saved, { brief: check });
    let page: Page | undefined;
    // Whether the page is sound for the account's next action (see SOUND_PAGE_FAILURES).
    let keep = false;
    // A page that paused may have been watched and driven through a live link: it never outlives its action.
    let paused = false;
    const closePage = (): void => void page?.close().catch(() => undefined);
    execution.signal.addEventListener("abort", closePage, { once: true });
    try {
      // Canceled while the context was being made: no page is opened, nothing is done.
      execution.signal.throwIfAborted();
      if (probe && !fromHere && (await probeShowsAccount(context.request, probe))) {
        await this.#saveIfChanged(execution, context, saved);
        return { outcome: "connected" };
      }
      page = pool.takePage(account.id) ?? (await context.newPage());
      followLoad(page, rule.pageTimeoutMs);
      await blockHosts(page, driver);
      this.pages.set(action.id, page);
      this.events.emit("page", action.id, page);
      const challenge: ExecutionContext["challenge"] = (...args) => {
        paused = true;
        return execution.challenge(...args);
      };
      let signedInAgain = false;
      const markConnected: ExecutionContext["markConnected"] = (profile) => {
        signedInAgain = true;
        return execution.markConnected(profile);
      };
      const driverContext = this.#driverContext({ ...execution, challenge, markConnected }, driver, page, saved !== undefined, rule);
      await driver.ensureSignedIn(driverContext);
      // A check asks whether the saved session is the account's own user's (a sign-in checks that itself).
      if (check && !signedInAgain) {
        const shown = await driver.signedInAs(page);
        if (!isSameUser(shown, account.username)) throw new WrongUserFailure(shown, account.username);
      }
      // A health check (DESIGN §16) is the driver's start page read as signed in or out, and a sign-in
      // without a person when it was out; an action goes on to its handler.
      const result = handler ? await handler(driverContext) : { outcome: signedInAgain ? "signed_in_again" : "connected" };
      await this.#saveIfChanged(execution, context, saved);
      // A check leaves no page open: an idle account's context keeps only its cookies.
      keep = !check;
      return result;
    } catch (error) {
      if (execution.signal.aborted) throw execution.signal.reason;
      if (error instanceof WrongUserFailure) {
        // Another user's session must not stay in the account's context, nor in the store.
        await context.clearCookies().catch(() => undefined);
        await execution.saveSession(JSON.stringify({ cookies: [], origins: [] }));
        throw error;
      }
      const failure =
        error instanceof ActionFailure
          ? error
          : isTimeout(error) && page
            ? judgeTimeout(page, rule)
            : new ActionFailure("browser_error", "The browser failed while running the action.");
      if (!(error instanceof ActionFailure) && !isTimeout(error)) execution.logger.warn({ err: error }, "browser failed during the action");
      // What the page showed is what whoever reads the feedback needs to see.
      if (page && (failure.code === "ui_changed" || failure.code === "browser_error")) await keepScreenshot(execution, page);
      if (error instanceof ActionFailure) {
        await this.#saveQuietly(execution, context, saved);
        keep = SOUND_PAGE_FAILURES.has(failure.code);
      }
      throw failure;
    } finally {
      execution.signal.removeEventListener("abort", closePage);
      this.pages.delete(action.id);
      this.events.emit("page", action.id, undefined);
      const kept = keep && !paused && !execution.signal.aborted && page !== undefined && pool.keepPage(account.id, page);
      if (!kept) closePage();
      pool.release(account.id);
    }
  }

  #probeTarget(execution: ExecutionContext, driver: Driver, rule: PageRule): ProbeTarget | undefined {
    const baseUrl = this.baseUrlOf(driver.platform.name);
    return baseUrl ? { driver, baseUrl, username: execution.account.username, timeoutMs: rule.pageTimeoutMs, signal: execution.signal } : undefined;
  }

  /** Saves the context's storage state when it differs from the one the action started with (sealing and writing it is not free). */
  async #saveIfChanged(execution: ExecutionContext, context: BrowserContext, saved: string | undefined): Promise<void> {
    const state = JSON.stringify(await context.storageState());
    if (state !== saved) await execution.saveSession(state);
  }

  /** A failed action may still have signed in: keep what the browser holds. */
  async #saveQuietly(execution: ExecutionContext, context: BrowserContext, saved: string | undefined): Promise<void> {
    try {
      await this.#saveIfChanged(execution, context, saved);
    } catch {
      // The browser is gone; the previous session stays.
    }
  }

  /** The one rule for waiting on this driver's pages. */
  #ruleOf(driver: Driver): PageRule {
    return { pageTimeoutMs: this.options.pageTimeoutMs ?? DEFAULT_PAGE_TIMEOUT_MS, platformTitle: driver.platform.title };
  }

  #driverContext(execution: ExecutionContext, driver: Driver, page: Page, hadSession: boolean, rule: PageRule): DriverContext {
    const baseUrl = this.options.baseUrls[driver.platform.name];
    if (!baseUrl) throw new ActionFailure("browser_error", `No address is configured for the ${driver.platform.name} platform.`);
    return {
      page,
      baseUrl,
      type: execution.action.type,
      username: execution.account.username,
      params: execution.action.params,
      hadSession,
      signal: execution.signal,
      clock: execution.clock,
      logger: execution.logger,
      secrets: execution.secrets,
      challenge: execution.challenge,
      refuseAnswer: execution.refuseAnswer,
      claimTotpStep: execution.claimTotpStep,
      commit: execution.commit,
      // Every sign-in ends here: the profile signed in must be the account's user.
      markConnected: async (profile) => {
        const shown = profile?.handle ?? (await driver.signedInAs(page));
        if (!isSameUser(shown, execution.account.username)) throw new WrongUserFailure(shown, execution.account.username);
        await execution.markConnected(profile);
      },
      settle: (states, options) => settle(page, states, driver.failures, rule, options?.timeoutMs),
      judgeTimeout: (error) => (isTimeout(error) ? judgeTimeout(page, rule) : undefined),
      whenVisible: (locator, signal) => whenVisible(page, locator, signal),
      open: async (pathOrUrl) => {
        const url = pathOrUrl.startsWith("/") ? baseUrl + pathOrUrl : pathOrUrl;
        try {
          await page.goto(url, { waitUntil: "commit" });
        } catch (error) {
          throw unreachable(error, driver, url) ?? (isTimeout(error) ? judgeTimeout(page, rule) : error);
        }
      },
    };
  }

  /** Where the platform is expected to live. */
  baseUrlOf(platform: string): string | undefined {
    return this.options.baseUrls[platform];
  }

  warmAccounts(): Iterable<string> {
    return this.options.pool.warmAccounts();
  }

  async forgetAccount(accountId: string): Promise<void> {
    await this.options.pool.forget(accountId);
  }

  async close(): Promise<void> {
    await this.options.pool.close();
  }
}

/**
 * Failures after which the page is sound for the account's next action: the platform said no to
 * this request. After the others the page showed something unexpected, or the account needs a
 * person (signed out, blocked) before any next action.
 */
const SOUND_PAGE_FAILURES: ReadonlySet<ActionErrorCode> = new Set(["not_found", "rejected", "invalid_input", "rate_limited"]);

/**
 * A navigation the network refused (connection refused, no such host, …) as a failure that
 * names the address and, where the driver knows one, how to bring the platform up.
 */
function unreachable(error: unknown, driver: Driver, url: string): ActionFailure | undefined {
  const network = error instanceof Error ? /net::(ERR_[A-Z_]+)/.exec(error.message)?.[1] : undefined;
  if (!network) return undefined;
  const origin = new URL(url).origin;
  return new ActionFailure("browser_error", `The ${driver.platform.title} platform at ${origin} cannot be reached (${network}).${driver.whenUnreachable ? ` ${driver.whenUnreachable}` : ""}`);
}

/** The page at a failure, kept for feedback; a page that cannot be captured any more is left. */
async function keepScreenshot(execution: ExecutionContext, page: Page): Promise<void> {
  try {
    const png = await page.screenshot({ type: "png", timeout: 3_000 });
    await execution.saveFailureScreenshot(png);
  } catch {
    // The page or its browser is gone: nothing to keep.
  }
}

/**
 * Every wait of Playwright's on the page (a click's navigation, a fill, a `goto`) lasts the page
 * timeout, and the page's arrival is followed from now on (`PageLoad`), so a timeout anywhere is
 * judged by one rule (`judgeTimeout`).
 */
function followLoad(page: Page, pageTimeoutMs: number): void {
  page.setDefaultTimeout(pageTimeoutMs);
  page.setDefaultNavigationTimeout(pageTimeoutMs);
  PageLoad.of(page);
}

/** Pages whose requests to blocked hosts are already aborted (a kept page is routed once). */
const routed = new WeakSet<Page>();

/** Aborts the requests a driver says its pages never need (`Driver.blockedHosts`); routes nothing for a driver without any. */
export async function blockHosts(page: Page, driver: Driver): Promise<void> {
  const hosts = driver.blockedHosts ?? [];
  if (hosts.length === 0 || routed.has(page)) return;
  routed.add(page);
  const blocked = (url: URL): boolean => hosts.some((host) => url.hostname === host || url.hostname.endsWith(`.${host}`));
  await page.route(blocked, (route) => route.abort("blockedbyclient"));
}
