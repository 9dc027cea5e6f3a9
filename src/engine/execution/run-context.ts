import { ActionFailure } from "../../domain/errors.js";
import { CHECK_TYPE } from "../../domain/health.js";
import { mayHoldSecrets, restoreSecrets } from "../../domain/secret-params.js";
import type { Store } from "../../store/index.js";
import { retryWhileBusy } from "../../store/index.js";
import type { ActionRecord } from "../../store/records.js";
import type { ChallengeRequest, ExecutionContext } from "./executor.js";
import { ACTION_ROW_LOCKED, type Lifecycle } from "./lifecycle.js";
import type { Logger } from "../logger.js";
import { updateAccountStatus } from "../outbox/index.js";
import { routineRunOf } from "../routines/run-of.js";

/** Why a write of a run that no longer holds its action fails. */
export const NO_LONGER_HELD = "This run no longer holds the action: it was recovered or ended elsewhere.";

/** What the runner supplies for the parts of a run that pause. */
export interface RunHooks {
  signal: AbortSignal;
  /** Whether the run still holds its action (its fence), asked inside each write's transaction. */
  holds(): Promise<boolean>;
  /** The commit point, noted fenced; throws when the run no longer holds its action. */
  commit(): Promise<void>;
  challenge(request: ChallengeRequest): Promise<string | undefined>;
  refuseAnswer(message: string): Promise<void>;
}

/**
 * The ExecutionContext of one run: the account's secrets and session through the store,
 * each write fenced and retried while the database is busy (a lock must not fail an action).
 */
export async function runContext(lifecycle: Lifecycle, logger: Logger, action: ActionRecord, hooks: RunHooks): Promise<ExecutionContext> {
  const { store } = lifecycle;
  const accountId = action.account_id;
  // Its secrets read once, with it, when the run starts: a driver asks for them while it drives the page.
  const found = await store.accounts.getWithSecrets(accountId);
  if (!found) throw new Error(`account ${accountId} of action ${action.id} is gone`);
  const { account, secrets: { password, totp_secret: totpSecret, session } } = found;
  // Its secret params (sealed at create, DESIGN §14), put back for this run only: the record stays redacted.
  const secrets = mayHoldSecrets(action.type, action.params) ? await store.routines.secretParams(action.id) : {};
  const whole: ActionRecord = { ...action, params: restoreSecrets(action.params, secrets) };
  const routine = action.type === "routine" ? await routineRunOf(store, whole, secrets) : undefined;
  // Fenced (DESIGN §11): a run whose action moved on, or whose runner's lease lapsed, writes nothing.
  const write = <T>(work: (store: Store) => Promise<T>): Promise<T> =>
    retryWhileBusy(() =>
      store.transaction(async () => {
        if (!(await hooks.holds())) throw new ActionFailure("browser_error", NO_LONGER_HELD);
        return work(store);
      }, ACTION_ROW_LOCKED),
    );
  return {
    action: whole,
    account,
    ...(routine ? { routine } : {}),
    signal: hooks.signal,
    clock: lifecycle.clock,
    logger: logger.child({ action_id: action.id, account_id: accountId }),
    secrets: () => ({ password, totpSecret }),
    challenge: hooks.challenge,
    refuseAnswer: hooks.refuseAnswer,
    // Per platform user: the same person connected twice shares one authenticator. The code it
    // gives is the stored secret's answer: the action says so (`answered_by: "totp"`).
    claimTotpStep: async (step) => {
      const claimed = await write(async (s) => {
        if (!(await s.totpSteps.claim(account.platform, account.username, step))) return false;
        await lifecycle.answered(action.id, "totp");
        return true;
      });
      return claimed;
    },
    commit: hooks.commit,
    loadSession: () => session,
    // A deleted account keeps no browser state.
    saveSession: (state) =>
      write(async (s) => {
        if (await s.accounts.lockForWrite(accountId)) await s.accounts.setSecret(accountId, "session", state, lifecycle.now());
      }),
    markConnected: async (profile) => {
      await write((s) => updateAccountStatus(s, accountId, { status: "connected", checked_at: lifecycle.now(), ...(profile ? { profile } : {}) }, lifecycle.now()));
    },
    // A health check's page is nobody's feedback.
    saveFailureScreenshot: async (png) => {
      if (action.type !== CHECK_TYPE) await write((s) => s.feedback.saveScreenshot(action.id, png, lifecycle.now()));
    },
  };
}
