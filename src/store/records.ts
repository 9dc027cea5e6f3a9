import type { ActionType } from "../domain/actions.js";
import type { ChallengeKind } from "../domain/challenges.js";
import type { ActionErrorCode } from "../domain/errors.js";
import type { KeyRole } from "../domain/keys.js";
import type { CHECK_TYPE } from "../domain/health.js";
import type { AnsweredBy, InboxChannel, MessageSource } from "../domain/inbox.js";
import type { ActionStatus } from "../domain/status.js";
import type { Paces } from "../domain/pace.js";

/** Records as the store returns them: plain data, secrets never included. */
export interface WorkspaceRecord {
  id: string;
  name: string;
  balance: number;
  created_at: string;
}

export interface KeyRecord {
  id: string;
  workspace_id: string;
  prefix: string;
  role: KeyRole;
  account_ids: string[] | undefined;
  created_at: string;
}

/** DESIGN §16: `needs_auth` — a person must sign in; `blocked` — the platform shows a checkpoint or suspension. */
export type AccountStatus = "new" | "connected" | "needs_auth" | "blocked";

export interface AccountRecord {
  id: string;
  workspace_id: string;
  platform: string;
  username: string;
  has_password: boolean;
  has_totp_secret: boolean;
  has_session: boolean;
  status: AccountStatus;
  /** Why it has that status (the platform's or the service's words); undefined when connected. */
  status_reason: string | undefined;
  /** The last time a check or an action found out whether the session is signed in. */
  checked_at: string | undefined;
  profile: { handle: string; name: string } | undefined;
  last_totp_step: number | undefined;
  /** Its overrides of the driver's default paces (DESIGN §16); `{}` when none. */
  pace: Paces;
  created_at: string;
  updated_at: string;
}

export interface ActionRecord {
  seq: number;
  id: string;
  workspace_id: string;
  account_id: string;
  platform: string;
  /** An action type, or the engine's own health check (DESIGN §16), never shown as an action. */
  type: ActionType | typeof CHECK_TYPE;
  params: Record<string, unknown>;
  status: ActionStatus;
  error_code: ActionErrorCode | undefined;
  error_message: string | undefined;
  result: Record<string, unknown> | undefined;
  price: number;
  cost: number;
  held: boolean;
  runner_id: string | undefined;
  /** The fencing number: grows each time the action is claimed (DESIGN §11). */
  lease: number;
  /** When the driver reached the commit point (about to do what cannot be undone). */
  committed_at: string | undefined;
  /** Who gave the latest answer to its sign-in challenges (DESIGN §15). */
  answered_by?: AnsweredBy | undefined;
  /** While queued: when it may start at the earliest (its account's pace or a cool-down, DESIGN §16). */
  not_before?: string | undefined;
  /** When it was first claimed: the starts its account's pace counts. */
  started_at?: string | undefined;
  created_at: string;
  updated_at: string;
  finished_at: string | undefined;
}

export type ChallengeState = "open" | "answered" | "resolved" | "expired" | "canceled" | "failed";

export interface ChallengeRecord {
  id: string;
  action_id: string;
  kind: ChallengeKind;
  message: string;
  expires_at: string;
  link_expires_at: string;
  refusals: number;
  state: ChallengeState;
  /** Who gave its latest answer. */
  answered_by?: AnsweredBy | undefined;
  /** When the inbox stopped answering it (a code it typed was refused): a person's from then on. */
  inbox_closed_at?: string | undefined;
  created_at: string;
  updated_at: string;
}

/** A message an account's inbox received (DESIGN §15); its sender and text are opened only when asked. */
export interface InboxMessageRecord {
  id: string;
  account_id: string;
  channel: InboxChannel;
  source: MessageSource;
  received_at: string;
  used_for: string | undefined;
  /** What was found in it when it arrived: a code, a sign-in link, or nothing. */
  found: "code" | "link" | undefined;
  /** Whether the inbox may type what was found (the platform's declared senders authenticate it). */
  may_answer: boolean;
}

export interface LedgerEntry {
  seq: number;
  workspace_id: string;
  kind: "grant" | "top_up" | "hold" | "release";
  amount: number;
  action_id: string | undefined;
  reference: string | undefined;
  created_at: string;
}

/** SQLite NULL → undefined, so records never carry null. */
export function orUndefined<T>(value: T | null): T | undefined {
  return value === null ? undefined : value;
}
