import type { APIResponse, Locator, Page } from "playwright";
import type { ActionType } from "../domain/actions.js";
import type { ActionErrorCode, ActionFailure } from "../domain/errors.js";
import type { ExecutionContext, PlatformInfo } from "../engine/execution/index.js";
import type { CHECK_TYPE } from "../domain/health.js";

/** What a driver sees of one run: the page, the params and the engine's hooks. */
export interface DriverContext extends Pick<
  ExecutionContext,
  "signal" | "clock" | "logger" | "secrets" | "challenge" | "refuseAnswer" | "claimTotpStep" | "commit" | "markConnected"
> {
  page: Page;
  /** The platform's origin, e.g. the sandbox's URL. */
  baseUrl: string;
  /** The action's type, or the engine's health check. */
  type: ActionType | typeof CHECK_TYPE;
  /** The account's sign-in name on the platform. */
  username: string;
  params: Record<string, unknown>;
  /** Whether the account had a saved session when this run began. */
  hadSession: boolean;
  /**
   * Opens a path of the platform (or a full URL of its origin) and returns once the
   * response has started; `settle` then waits for what the driver needs, not for every asset.
   */
  open(pathOrUrl: string): Promise<void>;
  /**
   * Waits for one of the named page states, checking the driver's failure detectors all along. The
   * page may take the page timeout to arrive; once loaded, `timeoutMs` (10 s by default) to show a state.
   */
  settle<K extends string>(states: Record<K, Locator>, options?: { timeoutMs?: number }): Promise<K>;
  /**
   * What an error thrown on the page means when it is a Playwright timeout: the platform did not
   * answer (the page still arriving), or `ui_changed`; undefined for any other error.
   */
  judgeTimeout(error: unknown): ActionFailure | undefined;
  /**
   * Resolves once `locator` shows on a page left waiting for a person (a challenge's
   * `resolvedOnPage`): looked for at each load and every few seconds, cheap for many paused pages.
   */
  whenVisible(locator: Locator, signal: AbortSignal): Promise<void>;
}

/** A page state that ends the action with a seed error code, e.g. a "slow down" page. */
export interface FailureDetector {
  code: ActionErrorCode;
  locate(page: Page): Locator;
  /** The message for the action's error; the page's own words where possible. */
  message: string;
}

export type ActionHandler = (context: DriverContext) => Promise<Record<string, unknown>>;

/**
 * A health check's first look (DESIGN §16): one request with the account's cookies, no page and no
 * renderer. Only an answer that shows the account's own user signed in ends the check there;
 * anything else (signed out, another user, an answer it does not know, the platform unreachable)
 * and the check opens `start` as an action would, signing in again when no person is needed.
 */
export interface SessionProbe {
  /** Fetched on the platform's address with the account's cookies; redirects are not followed. */
  path: string;
  /** Headers the platform's session check wants (e.g. the `Origin` a session is bound to). */
  headers?(baseUrl: string): Record<string, string>;
  /** The user the answer shows signed in (as `Driver.signedInAs` reads a page); undefined for nobody, or an answer it does not know. */
  signedInAs(response: APIResponse): Promise<string | undefined>;
}

/** One platform: its pages' failure states, how it signs in, and one handler per action type. */
export interface Driver {
  /** The driver API version it was written for (`DRIVER_API_VERSION` when it was written): another major version is refused at start-up. */
  apiVersion: string;
  platform: PlatformInfo;
  /** Detectors checked on every page the driver waits for. */
  failures: readonly FailureDetector[];
  /** Makes sure the account is signed in (signing in with stored credentials when the session is gone). */
  ensureSignedIn(context: DriverContext): Promise<void>;
  actions: Partial<Record<ActionType, ActionHandler>>;
  /** How a health check tells a live session without a page (`SignInSpec.probe`). */
  probe?: SessionProbe;
  /** Where an owner signs in by hand (owner sign-in links), and how to tell it worked. */
  manualSignIn: { path: string; signedIn(page: Page): Locator };
  /**
   * The handle of the user signed in on this page, read from the page (e.g. the profile
   * link), or undefined when the page does not show it. Checked against the account's
   * username after every sign-in: a session of another user is never kept.
   */
  signedInAs(page: Page): Promise<string | undefined>;
  /**
   * Hosts (and their subdomains) the platform's pages call that the driver never needs (news,
   * analytics, avatars): their requests are aborted rather than left to hang on a closed network.
   */
  blockedHosts?: readonly string[];
  /** Added to the message when the platform cannot be reached, e.g. how to start it. */
  whenUnreachable?: string;
}
