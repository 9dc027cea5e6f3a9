import type { ActionType } from "../domain/actions.js";
import { describePace } from "../domain/pace.js";
import { HOW_TO_ANSWER, isAnswerableByApi } from "../domain/challenges.js";
import { ACTION_ERRORS } from "../domain/errors.js";
import type { PublicAccount, PublicAction } from "../domain/public.js";

/** "1 credit", "2 credits". */
export function credits(amount: number): string {
  return `${amount} ${amount === 1 ? "credit" : "credits"}`;
}

/** The short readable summary of an action that goes next to its JSON in a tool result. */
export function describeAction(action: PublicAction): string {
  const what = `Action ${action.id} (${action.type} on ${action.platform}, account ${action.account_id})`;
  switch (action.status) {
    case "queued":
      return `${what} is queued. ${action.next_step ?? ""} Call get_action with action_id "${action.id}" to wait for it.`;
    case "running":
      return `${what} is running. It has not finished: call get_action with action_id "${action.id}" to wait for it.`;
    case "needs_input":
      return [`${what} is needs_input: it waits for an answer to a sign-in challenge.`, ...describeChallenge(action)].join("\n");
    case "succeeded":
      return `${what} succeeded (cost ${credits(action.cost)}).\nResult: ${JSON.stringify(action.result ?? {})}`;
    case "failed": {
      const error = action.error;
      if (!error) return `${what} failed (cost ${credits(action.cost)}).`;
      return [
        `${what} failed with ${error.code}: ${error.message}`,
        `Recommended: ${action.next_step ?? ACTION_ERRORS[error.code].advice}`,
        `Cost: ${credits(action.cost)}.`,
        ...describeFailedStep(error.details),
      ].join("\n");
    }
    case "canceled":
      return `${what} was canceled; it will not run further (cost ${credits(action.cost)}).`;
  }
}

/** A step that could not be done: which, where, and the page as it was, to write the repaired step from. */
function describeFailedStep(details: NonNullable<PublicAction["error"]>["details"]): string[] {
  if (!details) return [];
  const which = details.step === undefined ? (details.result_field === undefined ? "" : ` reading the result's "${details.result_field}"`) : ` at steps[${details.step}]`;
  const lines = [`Failed${which} on ${details.path}.`];
  if (details.snapshot !== undefined) {
    lines.push("The page as it was (accessibility snapshot; fields' values and secrets redacted): name the repaired step's target by role and name, label or text from it.", details.snapshot);
  }
  return lines;
}

function describeChallenge(action: PublicAction): string[] {
  const challenge = action.challenge;
  if (!challenge) return [`Call get_action with action_id "${action.id}" to read the challenge.`];
  const howTo = isAnswerableByApi(challenge.kind)
    ? `${HOW_TO_ANSWER[challenge.kind]} Call answer_challenge with action_id "${action.id}" and the answer.`
    : `${HOW_TO_ANSWER[challenge.kind]} This kind cannot be answered with answer_challenge; once it is done on the page, call get_action with action_id "${action.id}".`;
  return [
    `Challenge (${challenge.kind}): ${challenge.message}`,
    `How to answer: ${howTo}`,
    `Live browser (sign_in_url, no login needed, valid 30 minutes): ${challenge.sign_in_url}`,
    `Deadline: ${challenge.expires_at}; after it the action fails with challenge_timeout.`,
  ];
}

/** One line per account; never a secret, only whether one is stored. */
export function describeAccount(account: PublicAccount): string {
  const secrets = [account.has_password ? "password stored" : "no password", account.has_totp_secret ? "TOTP secret stored" : "no TOTP secret"];
  const profile = account.profile ? `, signs in as ${account.profile.handle} (${account.profile.name})` : "";
  const paces = Object.entries(account.pace ?? {}).map(([type, pace]) => describePace(type as ActionType, pace));
  const pace = paces.length > 0 ? ` Pace: ${paces.join("; ")}.` : "";
  return `Account ${account.id}: ${account.username} on ${account.platform}, ${account.status}${profile}; ${secrets.join(", ")}.${pace}`;
}

export function describeActionList(actions: readonly PublicAction[], nextCursor: string | undefined): string {
  if (actions.length === 0) return "No actions match.";
  const lines = actions.map((action) => {
    const detail = action.error ? ` (${action.error.code})` : action.challenge ? ` (${action.challenge.kind} challenge)` : "";
    return `- ${action.id}: ${action.type} on account ${action.account_id}, ${action.status}${detail}, created ${action.created_at}`;
  });
  if (nextCursor) lines.push(`More: call list_actions with cursor "${nextCursor}".`);
  return lines.join("\n");
}

const WAITING_FOR: Record<string, string> = {
  two_factor_code: "waiting for the code from the authenticator app",
  email_code: "waiting for the emailed code",
  sms_code: "waiting for the texted code",
  device_approval: "waiting for the sign-in to be approved on the other device",
  captcha: "waiting for the puzzle to be solved in the live browser",
  other: "waiting for an answer to the platform's question",
};

/** A progress notification's message: where the action is, in plain words. */
export function progressMessage(action: PublicAction): string {
  switch (action.status) {
    case "queued":
      return "waiting to start";
    case "running":
      return "working in the browser";
    case "needs_input":
      return action.challenge ? WAITING_FOR[action.challenge.kind]! : "waiting for an answer";
    case "succeeded":
      return "done";
    case "failed":
      return `failed: ${action.error?.code ?? "unknown"}`;
    case "canceled":
      return "canceled";
  }
}
