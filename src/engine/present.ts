import type { Challenge } from "../domain/challenges.js";
import type { ActionError } from "../domain/errors.js";
import type { AccountRecord, ActionRecord, ChallengeRecord } from "../store/records.js";

/** The public JSON of an action (DESIGN §3): fields absent when not applicable, never null. */
export interface PublicAction {
  id: string;
  object: "action";
  account_id: string;
  platform: string;
  type: string;
  params: Record<string, unknown>;
  status: ActionRecord["status"];
  challenge?: Challenge;
  error?: ActionError;
  result?: Record<string, unknown>;
  cost: number;
  created_at: string;
  updated_at: string;
  finished_at?: string;
}

export function liveUrl(publicUrl: string, token: string): string {
  return `${publicUrl.replace(/\/+$/, "")}/live/${token}`;
}

export function presentAction(action: ActionRecord, challenge?: { record: ChallengeRecord; signInUrl: string }): PublicAction {
  return {
    id: action.id,
    object: "action",
    account_id: action.account_id,
    platform: action.platform,
    type: action.type,
    params: action.params,
    status: action.status,
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
    ...(action.status === "failed" && action.error_code ? { error: { code: action.error_code, message: action.error_message ?? "" } } : {}),
    ...(action.status === "succeeded" && action.result ? { result: action.result } : {}),
    cost: action.cost,
    created_at: action.created_at,
    updated_at: action.updated_at,
    ...(action.finished_at ? { finished_at: action.finished_at } : {}),
  };
}

/** The public JSON of an account: never a secret, only whether one is stored. */
export interface PublicAccount {
  id: string;
  object: "account";
  platform: string;
  username: string;
  status: AccountRecord["status"];
  has_password: boolean;
  has_totp_secret: boolean;
  profile?: { handle: string; name: string };
  created_at: string;
  updated_at: string;
}

export function presentAccount(account: AccountRecord): PublicAccount {
  return {
    id: account.id,
    object: "account",
    platform: account.platform,
    username: account.username,
    status: account.status,
    has_password: account.has_password,
    has_totp_secret: account.has_totp_secret,
    ...(account.profile ? { profile: account.profile } : {}),
    created_at: account.created_at,
    updated_at: account.updated_at,
  };
}
