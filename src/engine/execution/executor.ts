import { z } from "zod";
import { ACTION_PARAMS, ACTION_PRICES, type ActionType } from "../../domain/actions.js";
import type { PlatformReference } from "../../domain/public.js";
import type { ChallengeKind } from "../../domain/challenges.js";
import type { MessagePatterns } from "../../domain/inbox.js";
import type { Paces } from "../../domain/pace.js";
import type { RoutineRun } from "../../domain/routines.js";
import type { AccountRecord, ActionRecord } from "../../store/records.js";
import type { Clock } from "../clock.js";
import type { Logger } from "../logger.js";

/** A platform as the engine knows it: the action types it supports. */
export interface PlatformInfo {
  name: string;
  title: string;
  description: string;
  actions: readonly ActionType[];
  /** Params of an action type on this platform, where they differ from the common ones (DESIGN §14), e.g. a wiki post's title. */
  params?: Partial<Record<ActionType, z.ZodType>>;
  /**
   * How this platform's codes and sign-in links read in its mails and texts (DESIGN §15): each
   * pattern's first capture group is the code or the link (the whole match without one), tried on a
   * mail's subject and text (its HTML's links written out) or a text message. The generic rule otherwise.
   */
  inbox?: MessagePatterns;
  /**
   * Default paces per action type (DESIGN §16): what the platform tolerates from one account.
   * An account's `pace` overrides them field by field; a type without one is not paced.
   */
  paces?: Paces;
}

/** The params schema of an action type on a platform: its own, or the common one. */
export function paramsSchema(type: ActionType, platform: PlatformInfo | undefined): z.ZodType {
  return platform?.params?.[type] ?? ACTION_PARAMS[type];
}

/** What a driver asks when a sign-in needs someone: the kind and the page's own words. */
export interface ChallengeRequest {
  kind: ChallengeKind;
  message: string;
  /**
   * For kinds cleared on the page itself (device approval, captcha, checkpoint cleared
   * by hand): resolves once the page has moved on. Code kinds leave it out and get
   * the answer instead.
   */
  resolvedOnPage?: (signal: AbortSignal) => Promise<void>;
}

/** What the engine hands an executor for one run of one action. */
export interface ExecutionContext {
  readonly action: ActionRecord;
  readonly account: AccountRecord;
  /** Aborted when the action is canceled, its challenge expires or the service stops. */
  readonly signal: AbortSignal;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The account's stored credentials, decrypted for this run only. */
  secrets(): { password: string | undefined; totpSecret: string | undefined };
  /** Pauses at `needs_input` until answered (code kinds) or resolved on the page. */
  challenge(request: ChallengeRequest): Promise<string | undefined>;
  /** The last answer was refused by the platform: back to `needs_input`, or `login_failed` (thrown) after 3. */
  refuseAnswer(message: string): Promise<void>;
  /** Claims a TOTP time step; false when that step was already submitted for this platform user. */
  claimTotpStep(step: number): Promise<boolean>;
  /**
   * The commit point: the driver is about to do what cannot be undone (click Post, Send).
   * An action that fails or is interrupted after it may have been done on the platform.
   */
  commit(): Promise<void>;
  /** The account's saved browser storage state (JSON), if any. */
  loadSession(): string | undefined;
  saveSession(state: string): Promise<void>;
  /** Records who the account signs in as, and that it is connected. */
  markConnected(profile: { handle: string; name: string } | undefined): Promise<void>;
  /** A routine action's saved steps and whole params (secrets unsealed for this run only). */
  readonly routine?: RoutineRun;
  /** Keeps the page as it was at a `ui_changed` or `browser_error` failure (sealed; for feedback). */
  saveFailureScreenshot(png: Buffer): Promise<void>;
}

/** Runs actions: the browser runner in production, a scripted one in engine tests. */
export interface ActionExecutor {
  execute(context: ExecutionContext): Promise<Record<string, unknown>>;
  /** Accounts whose browser context is open here now (warm): the runner's claims take their actions first. */
  warmAccounts?(): Iterable<string>;
  /** Lets go of the account's browser context, e.g. when the account is deleted. */
  forgetAccount?(accountId: string): Promise<void>;
  close?(): Promise<void>;
}

/** The action reference: platforms, their action types, params schemas and prices. */
export function platformReference(platforms: readonly PlatformInfo[]): PlatformReference[] {
  return platforms.map((platform) => ({
    name: platform.name,
    title: platform.title,
    description: platform.description,
    actions: platform.actions.map((type) => ({
      type,
      description: paramsSchema(type, platform).description ?? type,
      price: ACTION_PRICES[type],
      params: z.toJSONSchema(paramsSchema(type, platform), { io: "input" }) as Record<string, unknown>,
    })),
  }));
}