import { CHECK_TYPE } from "../../domain/health.js";
import { isAnswerableByApi } from "../../domain/challenges.js";
import type { ActionErrorCode } from "../../domain/errors.js";
import type { ActionRecord, ChallengeRecord } from "../../store/records.js";
import type { Store } from "../../store/index.js";
import type { ActionType } from "../../domain/actions.js";
import { describePace, utcTime, type Pace } from "../../domain/pace.js";

/** The surface an action is read through: `next_step` names only its operations (DESIGN §3). */
export type Surface = "rest" | "mcp" | "web";

type Steps = Record<ActionErrorCode, (action: ActionRecord) => string>;

/** The seed's recommended client response for each error code, in each surface's own operations. */
const AFTER_FAILURE: Record<Surface, Steps> = {
  rest: {
    signed_out: (a) => `Connect again (POST /v1/actions with type connect), or send the owner a sign-in link (POST /v1/accounts/${a.account_id}/sign-in-links).`,
    login_failed: (a) => `Fix the credentials with PATCH /v1/accounts/${a.account_id}, then connect again (POST /v1/actions with type connect).`,
    account_blocked: (a) => `Open a sign-in link (POST /v1/accounts/${a.account_id}/sign-in-links) and clear the checkpoint in the live browser.`,
    rate_limited: () => "Space out actions on this account; try later.",
    not_found: () => "Check the URL, handle or id.",
    unsupported: () => "Use browser steps (type browser_steps), or send feedback (POST /v1/feedback with message and action_id).",
    invalid_input: () => "Check the parameters in the action reference (GET /v1/platforms).",
    rejected: () => "Read the message, change the request, retry.",
    ui_changed: () => "Retry later.",
    challenge_timeout: () => "Run the action again (POST /v1/actions) and answer the challenge before its expires_at.",
    browser_unavailable: () => "Fix what the message names, then retry (with the same Idempotency-Key, if you sent one): nothing was charged.",
    browser_error: (a) => (a.committed_at ? "Check the platform first: it may already have done this. Retry only if it did not; if it repeats, send feedback (POST /v1/feedback with message and action_id)." : "Retry; if it repeats, send feedback (POST /v1/feedback with message and action_id)."),
    insufficient_credits: () => "Top up with x402 (POST /v1/credits/top-ups {credits}: a 402 gives the requirements to sign), then run the action again.",
  },
  mcp: {
    signed_out: () => "Connect again (run_action with type connect), or send the owner a sign-in link (create_sign_in_link).",
    login_failed: () => "Fix the credentials with update_account, then connect again (run_action with type connect).",
    account_blocked: () => "Open a sign-in link (create_sign_in_link) and clear the checkpoint in the live browser.",
    rate_limited: () => "Space out actions on this account; try later.",
    not_found: () => "Check the URL, handle or id.",
    unsupported: () => "Use browser steps (run_action with type browser_steps), or send feedback (send_feedback with this action_id).",
    invalid_input: () => "Check the parameters in the action reference (list_platforms).",
    rejected: () => "Read the message, change the request, retry.",
    ui_changed: () => "Retry later.",
    challenge_timeout: () => "Run the action again (run_action) and answer the challenge (answer_challenge) before its expires_at.",
    browser_unavailable: () => "Fix what the message names, then call run_action again (with the same idempotency_key, if you sent one): nothing was charged.",
    browser_error: (a) => (a.committed_at ? "Check the platform first: it may already have done this. Retry only if it did not; if it repeats, send feedback (send_feedback with this action_id)." : "Retry; if it repeats, send feedback (send_feedback with this action_id)."),
    insufficient_credits: () => "Top up with top_up_credits (x402: it returns the requirements to sign, then settles), then run the action again.",
  },
  web: {
    signed_out: () => "Connect the account again (Connect on its page), or open a sign-in link there and sign in by hand.",
    login_failed: () => "Fix the credentials on the account's page, then connect again.",
    account_blocked: () => "Open a sign-in link on the account's page and clear the checkpoint in the live browser.",
    rate_limited: () => "Space out actions on this account; try later.",
    not_found: () => "Check the URL, handle or id.",
    unsupported: () => "Use browser steps (type browser_steps), or send feedback (the form on this page).",
    invalid_input: () => "Check the parameters: each field of the run form says what it takes.",
    rejected: () => "Read the message, change the request, retry.",
    ui_changed: () => "Retry later.",
    challenge_timeout: () => "Run the action again and answer the challenge before its deadline.",
    browser_unavailable: () => "Fix what the message names, then run it again: nothing was charged.",
    browser_error: (a) => (a.committed_at ? "Check the platform first: it may already have done this. Retry only if it did not; if it repeats, send feedback (the form on this page)." : "Retry; if it repeats, send feedback (the form on this page)."),
    insufficient_credits: () => "Top up on the Credits page (x402, paid from a browser wallet), then run the action again.",
  },
};

/** What to do about a challenge, in the surface's operations. */
function answerStep(surface: Surface, action: ActionRecord, challenge: ChallengeRecord): string {
  const by = `before ${challenge.expires_at}`;
  // The page shows the deadline as a countdown beside this.
  if (surface === "web") {
    return isAnswerableByApi(challenge.kind)
      ? "Type the code in the answer box before the time runs out, or open the live browser."
      : `Open the live browser and complete the ${challenge.kind.replace("_", " ")} there before the time runs out, or on the other device.`;
  }
  if (isAnswerableByApi(challenge.kind)) {
    return surface === "rest"
      ? `Answer with POST /v1/actions/${action.id}/answer {"answer": "…"} ${by}, or open challenge.sign_in_url.`
      : `Answer with answer_challenge (action_id "${action.id}", answer "…") ${by}, or open challenge.sign_in_url.`;
  }
  const follow = surface === "rest" ? `GET /v1/actions/${action.id}?wait=30` : `get_action (action_id "${action.id}")`;
  return `Open challenge.sign_in_url (the live browser) and complete the ${challenge.kind.replace("_", " ")} there ${by}, or on the other device; then follow the action with ${follow}.`;
}

/** What a queued action waits for. */
async function queuedStep(store: Store, action: ActionRecord, surface: Surface, pacing: PacingView): Promise<string> {
  if (action.not_before && (!pacing.now || new Date(action.not_before) > pacing.now)) return heldStep(store, action, surface, pacing);
  const ahead = await store.actions.aheadOf(action);
  if (ahead?.type === CHECK_TYPE) return "Waits for a check of the account's sign-in: seconds, or up to a minute while the inbox receives a code.";
  if (ahead?.status === "needs_input") return `Waits behind ${ahead.id} on this account, which is at needs_input: it starts once that challenge is answered or the action ends.`;
  if (ahead) return `Waits behind ${ahead.id} (${ahead.status}) on this account: one action at a time per account.`;
  return "Waits for a free run slot: it starts as soon as one of the running actions ends.";
}

/** Where each surface changes an account's pace. */
const CHANGE_PACE: Record<Surface, (action: ActionRecord) => string> = {
  rest: (a) => `To change the pace: PATCH /v1/accounts/${a.account_id} {"pace": {"${a.type}": {…}}}.`,
  mcp: (a) => `To change the pace: update_account (account_id "${a.account_id}", pace {"${a.type}": {…}}).`,
  web: () => "To change the pace: the Pace section of the account's page.",
};

/** A queued action held back by its account's pace or a platform's cool-down (DESIGN §16): why, and when it runs. */
async function heldStep(store: Store, action: ActionRecord, surface: Surface, pacing: PacingView): Promise<string> {
  const type = action.type;
  if (type === CHECK_TYPE) throw new Error("a health check is never paced");
  const notBefore = new Date(action.not_before!);
  const at = utcTime(notBefore, pacing.now ?? notBefore);
  const cooldown = await store.paceCooldowns.get(action.account_id, action.type);
  if (cooldown && cooldown.until >= action.not_before!) {
    return `Cooling down: the platform asked this account to slow down (rate_limited), so its ${action.type} actions wait; runs at ${at}. It is not failed; a success of this type ends the cool-down.`;
  }
  const pace = await pacing.paceOf?.(action.account_id, type);
  const rule = pace ? `${describePace(type, pace)} on this account` : `this account's pace for ${type}`;
  return `Paced: ${rule}; runs at ${at}. ${CHANGE_PACE[surface](action)}`;
}

/** What `next_step` may know of pacing: now (a `not_before` already past holds nothing back), and the account's pace of a type. */
export interface PacingView {
  now?: Date;
  paceOf?: (accountId: string, type: ActionType) => Promise<Pace | undefined>;
}

/** `next_step` of an action (DESIGN §3): present when it is queued, needs_input or failed. */
export async function nextStep(store: Store, action: ActionRecord, surface: Surface, challenge?: ChallengeRecord, pacing: PacingView = {}): Promise<string | undefined> {
  if (action.status === "queued") return queuedStep(store, action, surface, pacing);
  if (action.status === "needs_input" && challenge) return answerStep(surface, action, challenge);
  if (action.status === "failed" && action.error_code) return AFTER_FAILURE[surface][action.error_code](action);
  return undefined;
}
