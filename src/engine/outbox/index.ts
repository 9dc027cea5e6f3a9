import { ACTION_ERRORS, type ActionErrorCode } from "../../domain/errors.js";
import { CHECK_TYPE, checkOutcome, isRequestedCheck, type CheckOutcome } from "../../domain/health.js";
import type { AccountRecord, AccountStatus, ActionRecord, EventRecord, EventType, Store } from "../../store/index.js";
import { newId } from "../ids.js";
import { nextStep, presentAccount, presentAction } from "../present/index.js";

/**
 * The event outbox's writer (DESIGN §13). Each function is called inside the transaction of the
 * change it records, so an event exists exactly when its change committed, and is fanned out to the
 * workspace's webhook endpoints in that same transaction. It is the engine's (its transactions
 * write it); what reads the outbox — webhooks, the stream, feedback — is `events/`, above the engine.
 */

/** Records an action's status as the public sees it now (`needs_input` with its challenge). */
export async function recordActionEvent(store: Store, actionId: string, now: string, known?: ActionRecord): Promise<void> {
  // `known`: the record as the caller's own write returned it, in this transaction (no read again).
  const action = known ?? (await store.actions.get(actionId));
  // A health check is the engine's own: what it finds is an account.updated event.
  if (!action || action.type === CHECK_TYPE) return;
  const challenge = action.status === "needs_input" ? await store.challenges.latestOf(action.id) : undefined;
  const data = presentAction(action, challenge && { record: challenge, signInUrl: "" }, await nextStep(store, action, "rest", challenge)) as unknown as Record<string, unknown>;
  // The live link is a capability: it is rebuilt from the sealed token when the event is sent.
  if (data.challenge) delete (data.challenge as Record<string, unknown>).sign_in_url;
  await append(store, { workspace_id: action.workspace_id, type: "action.updated", subject_id: action.id, account_id: action.account_id, challenge_id: challenge?.id, data, created_at: now });
}

/**
 * Records the events of actions a claim took, as the public sees them now (`running`: no challenge,
 * no next step), in a fixed number of statements whatever their number (DESIGN §11 "claims are
 * batched"). Health checks are left out, as `recordActionEvent` leaves them.
 */
export async function recordClaimEvents(store: Store, taken: readonly ActionRecord[], now: string): Promise<void> {
  const events = taken
    .filter((action) => action.type !== CHECK_TYPE)
    .map((action) => ({
      id: newId("evt"),
      workspace_id: action.workspace_id,
      type: "action.updated" as const,
      subject_id: action.id,
      account_id: action.account_id,
      challenge_id: undefined,
      data: presentAction(action) as unknown as Record<string, unknown>,
      created_at: now,
    }));
  await appendAll(store, events);
}

/** Records an account's status (when it is added, and when its status moves). */
export async function recordAccountEvent(store: Store, accountId: string, now: string): Promise<void> {
  const account = await store.accounts.get(accountId);
  if (!account) return;
  const data = presentAccount(account) as unknown as Record<string, unknown>;
  await append(store, { workspace_id: account.workspace_id, type: "account.updated", subject_id: account.id, account_id: account.id, challenge_id: undefined, data, created_at: now });
}

/**
 * Changes an account's status (DESIGN §16) with its reason (none once connected), and its profile
 * or `checked_at` if given, recording the event when the status or its reason moves (then true).
 * `locked`: the account's row as this transaction already locked it (not locked and read again).
 */
export async function updateAccountStatus(
  store: Store,
  accountId: string,
  changes: { status: AccountStatus; status_reason?: string; profile?: AccountRecord["profile"]; checked_at?: string },
  now: string,
  locked?: AccountRecord,
): Promise<boolean> {
  const before = locked ?? (await store.accounts.lockForWrite(accountId));
  if (!before) return false; // deleted meanwhile: nothing to record
  const reason = changes.status === "connected" ? undefined : changes.status_reason;
  await store.accounts.update(accountId, { ...changes, status_reason: reason ?? null }, now);
  if (before.status === changes.status && before.status_reason === reason) return false;
  await recordAccountEvent(store, accountId, now);
  return true;
}

/**
 * What an ended action found out about its account's session (DESIGN §16), in the transaction that
 * ends it: a success was signed in (`connected`, checked now); `signed_out` makes it `needs_auth` and
 * `account_blocked` `blocked`, with the failure's words as the reason. Other failures say nothing of it.
 */
export async function recordAccountOutcome(store: Store, action: ActionRecord, outcome: { code?: ActionErrorCode; message?: string }, now: string): Promise<void> {
  const account = await store.accounts.lockForWrite(action.account_id);
  if (!account) return;
  if (action.type === CHECK_TYPE) {
    // Checks that could not find out back off (DESIGN §16): the scheduler waits longer after each.
    const unanswered = outcome.code !== undefined && checkOutcome({ status: "failed", error_code: outcome.code }) === "failed";
    await store.accounts.update(account.id, { check_failures: unanswered ? (await store.accounts.checkFailures(account.id)) + 1 : 0 }, now);
  }
  const recorded = await recordSessionFound(store, account, action, outcome, now);
  // Whoever asked for a check hears that it is done, whatever it found (the account as it is now).
  if (!recorded && isRequestedCheck(action)) await recordAccountEvent(store, account.id, now);
}

/** Sets what the action found out of the session (`account`: its row, locked by this transaction); true when that was an `account.updated` event. */
async function recordSessionFound(store: Store, account: AccountRecord, action: ActionRecord, outcome: { code?: ActionErrorCode; message?: string }, now: string): Promise<boolean> {
  if (outcome.code === undefined) {
    if (account.status !== "new") return updateAccountStatus(store, account.id, { status: "connected", checked_at: now }, now, account);
    await store.accounts.update(account.id, { checked_at: now }, now);
    return false;
  }
  const status = action.type === CHECK_TYPE ? CHECKED_STATUS[checkOutcome({ status: "failed", error_code: outcome.code }) ?? "failed"] : ACCOUNT_STATUS_OF[outcome.code];
  return status ? updateAccountStatus(store, account.id, { status, status_reason: outcome.message ?? ACTION_ERRORS[outcome.code].message, checked_at: now }, now, account) : false;
}

const ACCOUNT_STATUS_OF: Partial<Record<ActionErrorCode, AccountStatus>> = { signed_out: "needs_auth", account_blocked: "blocked" };
/** A failed health check: a person is needed, or a checkpoint; a platform that did not answer says nothing of the session. */
const CHECKED_STATUS: Record<CheckOutcome, AccountStatus | undefined> = { connected: "connected", signed_in_again: "connected", needs_auth: "needs_auth", blocked: "blocked", failed: undefined };

async function append(store: Store, event: Omit<EventRecord, "seq" | "tx_order" | "id">): Promise<void> {
  await appendAll(store, [{ ...event, id: newId("evt") }]);
}

/** Writes events and their deliveries: the endpoints are read only when the insert found some in their workspaces. */
async function appendAll(store: Store, events: readonly Omit<EventRecord, "seq" | "tx_order">[]): Promise<void> {
  const { seqs, endpoints } = await store.events.insertAll(events);
  if (!endpoints) return;
  await store.webhooks.fanOutAll(
    events.map((event, i) => ({ seq: seqs[i]!, workspace_id: event.workspace_id, type: event.type, account_id: event.account_id, subject_id: event.subject_id, created_at: event.created_at })),
    () => newId("dlv"),
  );
}

export type { EventType };
