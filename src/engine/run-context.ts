import type { Store } from "../store/index.js";
import { retryWhileBusy } from "../store/busy.js";
import type { ActionRecord } from "../store/records.js";
import type { ChallengeRequest, ExecutionContext } from "./executor.js";
import type { Lifecycle } from "./lifecycle.js";
import type { Logger } from "./logger.js";
import { updateAccountStatus } from "./outbox.js";

/** What the runner supplies for the parts of a run that pause. */
export interface RunHooks {
  signal: AbortSignal;
  challenge(request: ChallengeRequest): Promise<string | undefined>;
  refuseAnswer(message: string): Promise<void>;
}

/**
 * The ExecutionContext of one run: the account's secrets and session through the store,
 * each write retried while the database is locked (a lock must not fail an action).
 */
export function runContext(lifecycle: Lifecycle, logger: Logger, action: ActionRecord, hooks: RunHooks): ExecutionContext {
  const { store } = lifecycle;
  const accountId = action.account_id;
  const account = store.accounts.get(accountId);
  if (!account) throw new Error(`account ${accountId} of action ${action.id} is gone`);
  const write = <T>(work: (store: Store) => T): Promise<T> => retryWhileBusy(() => store.transaction(() => work(store)));
  return {
    action,
    account,
    signal: hooks.signal,
    clock: lifecycle.clock,
    logger: logger.child({ action_id: action.id, account_id: accountId }),
    secrets: () => ({ password: store.accounts.getSecret(accountId, "password"), totpSecret: store.accounts.getSecret(accountId, "totp_secret") }),
    challenge: hooks.challenge,
    refuseAnswer: hooks.refuseAnswer,
    // Per platform user: the same person connected twice shares one authenticator.
    claimTotpStep: (step) => write((s) => s.totpSteps.claim(account.platform, account.username, step)),
    commit: () => write((s) => s.actions.update(action.id, { committed_at: lifecycle.now() }, lifecycle.now())),
    loadSession: () => store.accounts.getSecret(accountId, "session"),
    // A deleted account keeps no browser state.
    saveSession: (state) => write((s) => void (s.accounts.get(accountId) && s.accounts.setSecret(accountId, "session", state, lifecycle.now()))),
    markConnected: (profile) => write((s) => updateAccountStatus(s, accountId, { status: "connected", ...(profile ? { profile } : {}) }, lifecycle.now())),
    markSignedOut: () => write((s) => updateAccountStatus(s, accountId, { status: "signed_out" }, lifecycle.now())),
    saveFailureScreenshot: (png) => write((s) => s.feedback.saveScreenshot(action.id, png, lifecycle.now())),
  };
}
