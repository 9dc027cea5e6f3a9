import type { ActionType } from "../../domain/actions.js";
import { CHECK_TYPE } from "../../domain/health.js";
import type { PublicAccount, PublicAction, PublicMessage } from "../../domain/public.js";
import type { Store } from "../../store/index.js";
import type { Paces } from "../../domain/pace.js";
import type { AccountRecord, ActionRecord, ChallengeRecord } from "../../store/records.js";

export function liveUrl(publicUrl: string, token: string): string {
  return `${publicUrl.replace(/\/+$/, "")}/live/${token}`;
}

export type { PublicAccount, PublicAction, PublicMessage };

/** The public JSON of an inbox message: never its text. */
export function presentMessage(message: {
  id: string;
  channel: PublicMessage["channel"];
  from: string | undefined;
  received_at: string;
  used_for: string | undefined;
  found: PublicMessage["found"];
  may_answer: boolean;
  dropped?: number;
}): PublicMessage {
  return {
    id: message.id,
    object: "message",
    channel: message.channel,
    ...(message.from !== undefined ? { from: message.from } : {}),
    received_at: message.received_at,
    ...(message.used_for !== undefined ? { used_for: message.used_for } : {}),
    ...(message.found !== undefined ? { found: message.found } : {}),
    may_answer: message.may_answer,
    ...(message.dropped ? { dropped: message.dropped } : {}),
  };
}

/** An action's type as the public knows it: a health check (the engine's own) is never presented. */
function publicType(action: ActionRecord): ActionType {
  if (action.type === CHECK_TYPE) throw new Error(`health check ${action.id} is not an action anyone sees`);
  return action.type;
}

/** The public JSON of an action (DESIGN §3): fields absent when not applicable, never null. */
/** A failed action's error object: code and message, and the details its run kept (a failed step's page) in the result column. */
function errorOf(action: ActionRecord): NonNullable<PublicAction["error"]> {
  const details = action.result?.error_details as NonNullable<PublicAction["error"]>["details"] | undefined;
  return { code: action.error_code!, message: action.error_message ?? "", ...(details ? { details } : {}) };
}

export function presentAction(action: ActionRecord, challenge?: { record: ChallengeRecord; signInUrl: string }, nextStep?: string): PublicAction {
  return {
    id: action.id,
    object: "action",
    account_id: action.account_id,
    platform: action.platform,
    type: publicType(action),
    params: action.params,
    status: action.status,
    ...(action.status === "queued" && action.not_before ? { not_before: action.not_before } : {}),
    ...(action.status === "needs_input" && challenge
      ? {
          challenge: {
            kind: challenge.record.kind,
            message: challenge.record.message,
            expires_at: challenge.record.expires_at,
            sign_in_url: challenge.signInUrl,
          },
        }
      : {}),
    ...(action.status === "failed" && action.error_code ? { error: errorOf(action) } : {}),
    ...(nextStep ? { next_step: nextStep } : {}),
    ...(action.status === "succeeded" && action.result ? { result: action.result } : {}),
    ...(action.answered_by ? { answered_by: action.answered_by } : {}),
    cost: action.cost,
    created_at: action.created_at,
    updated_at: action.updated_at,
    ...(action.finished_at ? { finished_at: action.finished_at } : {}),
  };
}

/**
 * The public JSON of an account: never a secret, only whether one is stored; its inbox when the key
 * may see it; the pace it runs at when the caller knows its platform's defaults.
 */
export function presentAccount(account: AccountRecord, extras: { inbox?: PublicAccount["inbox"]; pace?: Paces } = {}): PublicAccount {
  const { inbox, pace } = extras;
  return {
    id: account.id,
    object: "account",
    platform: account.platform,
    username: account.username,
    status: account.status,
    ...(account.status_reason !== undefined ? { status_reason: account.status_reason } : {}),
    ...(account.checked_at !== undefined ? { checked_at: account.checked_at } : {}),
    ...(pace ? { pace } : {}),
    has_password: account.has_password,
    has_totp_secret: account.has_totp_secret,
    ...(account.profile ? { profile: account.profile } : {}),
    ...(inbox ? { inbox } : {}),
    created_at: account.created_at,
    updated_at: account.updated_at,
  };
}

/**
 * A challenge's live link, on this coordinator's public URL (behind a balancer, the one public
 * URL): opened on any coordinator, it reaches the page wherever it is held (DESIGN §11).
 */
export async function signInUrl(core: { store: Store; publicUrl: string }, challengeId: string): Promise<string> {
  return liveUrl(core.publicUrl, await core.store.challenges.linkToken(challengeId));
}
