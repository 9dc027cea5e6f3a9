import { z } from "zod";
import { ACTION_TYPES } from "./actions.js";
import { CHALLENGE_KINDS } from "./challenges.js";
import { ACTION_ERROR_CODES, REQUEST_ERRORS, type RequestErrorCode } from "./errors.js";
import { ANSWERED_BY, INBOX_CHANNELS } from "./inbox.js";
import { ACTION_STATUSES } from "./status.js";
import { PaceJson } from "./pace.js";

/** The public shapes clients read (DESIGN §3, §5): REST responses, MCP output schemas and OpenAPI. */
const timestamp = z.iso.datetime();

/** A free-form JSON object, said so in its JSON Schema (`additionalProperties: true`) rather than left unconstrained. */
export function freeFormObject() {
  return z.record(z.string(), z.unknown()).meta({ additionalProperties: true });
}

export const ChallengeJson = z
  .object({
    kind: z.enum(CHALLENGE_KINDS).describe("What the sign-in asks for: code kinds are answered with text; device_approval and captcha are done on the page or the other device."),
    message: z.string().describe("What is asked, in the platform's words."),
    expires_at: timestamp.describe("Deadline for answering; after it the action fails with challenge_timeout."),
    sign_in_url: z.url().describe("Live browser for this challenge; needs no login, valid 30 minutes."),
  })
  .meta({ id: "Challenge" });

export const ActionJson = z
  .object({
    id: z.string().describe("The action's id (`act_…`)."),
    object: z.literal("action").describe("Always `action`."),
    account_id: z.string().describe("The account it acts as (`acc_…`)."),
    platform: z.string().describe("The account's platform."),
    type: z.enum(ACTION_TYPES).describe("What it does; each type's params and price are in the platform reference."),
    params: freeFormObject().describe("The params the action was created with."),
    status: z.enum(ACTION_STATUSES).describe("queued, running, needs_input (a challenge waits for an answer), then one of succeeded, failed, canceled."),
    challenge: ChallengeJson.optional().describe("Present when status is needs_input."),
    not_before: timestamp
      .optional()
      .describe("While queued: the earliest it may start, held back by its account's pace or by a platform's cool-down after rate_limited (DESIGN §16); next_step says which. Never failed for pacing."),
    error: z
      .object({
        code: z.enum(ACTION_ERROR_CODES).describe("Why it failed; next_step gives the recommended response to this code."),
        message: z.string().describe("What happened, in words for a person."),
        details: z
          .object({
            step: z.int().optional().describe("The index (from 0) of the step that could not be done."),
            result_field: z.string().optional().describe("The result field of a platform file's recipe that could not be read."),
            path: z.string().describe("The page's path when it failed."),
            snapshot: z.string().optional().describe("The page's accessibility snapshot as it was (roles, names, text; fields' values and secrets redacted; at most 8 KB): what to write the repaired step from."),
          })
          .optional()
          .describe("Present when a step could not be done (ui_changed, or a failure page's code): where, and what the page showed."),
      })
      .optional()
      .describe("Present when status is failed."),
    next_step: z
      .string()
      .optional()
      .describe("What to do now, naming this surface's operations: present when queued (what it waits for), needs_input (how to answer) or failed (the recommended response)."),
    result: freeFormObject().optional().describe("Present when status is succeeded: its shape depends on the type (GET /v1/platforms, list_platforms)."),
    answered_by: z
      .enum(ANSWERED_BY)
      .optional()
      .describe("Who gave the latest answer to its sign-in challenges: inbox (a message its inbox received), totp (the stored secret), person (the live page or web app) or agent (the API or MCP); absent until one is answered."),
    cost: z.int().describe("Credits charged; 0 until the action has ended, and for free outcomes."),
    created_at: timestamp.describe("When it was created."),
    updated_at: timestamp.describe("When its status last changed."),
    finished_at: timestamp.optional().describe("When it ended; absent until then."),
  })
  .meta({ id: "Action" });

/** An account's status (DESIGN §16). */
export const ACCOUNT_STATUSES = ["new", "connected", "needs_auth", "blocked"] as const;

export const AccountJson = z
  .object({
    id: z.string().describe("The account's id (`acc_…`)."),
    object: z.literal("account").describe("Always `account`."),
    platform: z.string().describe("The platform it belongs to."),
    username: z.string().describe("The sign-in name on the platform."),
    status: z
      .enum(ACCOUNT_STATUSES)
      .describe(
        "new: never signed in; connected: its saved session is signed in; needs_auth: a person must sign in (a sign-in link answers it); blocked: the platform shows a checkpoint or suspension (clear it through a sign-in link).",
      ),
    status_reason: z.string().optional().describe("Why it is needs_auth or blocked: the platform's or the service's words."),
    checked_at: timestamp.optional().describe("The last time a health check or an action found out whether its session is signed in."),
    pace: z
      .partialRecord(z.enum(ACTION_TYPES), PaceJson)
      .optional()
      .describe(
        "The pace it runs at, per action type: the platform's defaults with this account's overrides (PATCH with `pace`). An action past it stays queued with not_before. Absent in account.updated events' data.",
      ),
    has_password: z.boolean().describe("Whether a password is stored (it is never returned)."),
    has_totp_secret: z.boolean().describe("Whether a TOTP secret is stored (it is never returned)."),
    profile: z
      .object({ handle: z.string().describe("The signed-in user's handle."), name: z.string().describe("The signed-in user's display name.") })
      .optional()
      .describe("Who the saved session is signed in as; absent until the first sign-in."),
    inbox: z
      .object({
        email: z.string().optional().describe("The account's inbox address (present while the service's SMTP listener is on): set it as the platform account's e-mail, or forward the platform's mails to it."),
        sms_url: z.url().describe("Where an SMS gateway or a phone's forwarding rule posts each text (`{\"from\"?, \"text\"}` or the form fields `From`, `Body`); needs no key: keep it private."),
      })
      .optional()
      .describe("Where codes arrive by themselves (DESIGN §15): shown to admin and operator keys allowed the account."),
    created_at: timestamp.describe("When it was added."),
    updated_at: timestamp.describe("When it last changed."),
  })
  .meta({ id: "Account" });

export const MessageJson = z
  .object({
    id: z.string().describe("The message's id (`msg_…`)."),
    object: z.literal("message").describe("Always `message`."),
    channel: z.enum(INBOX_CHANNELS).describe("email or sms."),
    from: z.string().optional().describe("Who sent it, as the mail or text said (absent for pushed messages)."),
    received_at: timestamp.describe("When the inbox received it; it is kept 24 hours."),
    used_for: z.string().optional().describe("The action whose challenge it answered; absent while unused (nothing found in it, a sender not authenticated, or no challenge waited)."),
    found: z.enum(["code", "link"]).optional().describe("What was found in it when it arrived: a code or a sign-in link; absent when nothing was."),
    may_answer: z
      .boolean()
      .describe("Whether the inbox may type what it holds: false when nothing was found, or for mail the platform's declared senders do not authenticate (DKIM) — kept and listed, never typed."),
    dropped: z
      .number()
      .int()
      .optional()
      .describe("Only on a message just received: how many of the account's oldest unused messages it pushed out (an account keeps at most 100)."),
  })
  .meta({ id: "Message" });

export const ErrorJson = z
  .object({
    error: z.object({
      code: z.enum(Object.keys(REQUEST_ERRORS) as [RequestErrorCode, ...RequestErrorCode[]]).describe("The request error (docs/errors.md)."),
      message: z.string().describe("What was wrong, in words for a person."),
      details: freeFormObject().optional().describe("The fields or values concerned."),
    }),
  })
  .meta({ id: "Error" });

export const CreditsJson = z.object({ balance: z.int().min(0).describe("Credits the workspace holds now.") }).meta({ id: "Credits" });

export const TopUpJson = z
  .object({
    balance: z.int().min(0).describe("Credits the workspace holds now, the top-up included."),
    credited: z.int().min(1).describe("Credits this payment added."),
    transaction: z.string().describe("The settlement's transaction hash on the payment's network."),
  })
  .meta({ id: "TopUp" });

export const PlatformJson = z
  .object({
    name: z.string().describe("The platform's name, as accounts and actions give it."),
    title: z.string().describe("Its name for people."),
    description: z.string().describe("What it is."),
    actions: z.array(
      z.object({
        type: z.enum(ACTION_TYPES).describe("The action type."),
        description: z.string().describe("What the action does and what its result holds."),
        price: z.int().describe("Credits per action."),
        params: freeFormObject().describe("JSON Schema of the params."),
      }),
    ).describe("The action types it supports."),
  })
  .meta({ id: "Platform" });

export function listOf<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item).describe("This page, newest first where the list is ordered."), next_cursor: z.string().optional().describe("Absent on the last page.") });
}

export type PublicAction = z.infer<typeof ActionJson>;
export type PublicAccount = z.infer<typeof AccountJson>;
export type PublicMessage = z.infer<typeof MessageJson>;
export type PlatformReference = z.infer<typeof PlatformJson>;

export const EVENT_TYPES = ["action.updated", "account.updated"] as const;

export const EventJson = z
  .object({
    id: z.string().describe("The event's id (`evt_…`): the `webhook-id` of its deliveries and the SSE `id`; deduplicate on it."),
    type: z.enum(EVENT_TYPES).describe("action.updated: an action's status changed (needs_input with its challenge); account.updated: an account was added or its status changed."),
    created_at: timestamp.describe("When the change committed."),
    data: freeFormObject().describe("The public object (Action or Account) as it was after the change."),
  })
  .meta({ id: "Event" });

export const WebhookJson = z
  .object({
    id: z.string().describe("The endpoint's id (`whe_…`)."),
    object: z.literal("webhook").describe("Always `webhook`."),
    url: z.url().describe("Where events are POSTed."),
    events: z.array(z.enum(EVENT_TYPES)).describe("The event types it receives."),
    status: z.enum(["enabled", "disabled"]).describe("disabled: it failed for days and gets nothing more (delete it and create it again once fixed)."),
    disabled_reason: z.string().optional().describe("Why it was disabled."),
    failing_since: timestamp.optional().describe("When its current run of failed attempts began; absent while deliveries succeed."),
    secret: z.string().optional().describe("The signing secret (`whsec_…`): only in the response that creates the endpoint."),
    created_at: timestamp.describe("When it was created."),
  })
  .meta({ id: "Webhook" });

export const WebhookDeliveryJson = z
  .object({
    id: z.string().describe("The delivery's id (`dlv_…`)."),
    object: z.literal("webhook_delivery").describe("Always `webhook_delivery`."),
    event_id: z.string().describe("The event delivered (its `webhook-id`)."),
    event_type: z.enum(EVENT_TYPES).describe("The event's type."),
    subject_id: z.string().describe("The action or account the event is about."),
    state: z.enum(["pending", "succeeded", "failed"]).describe("pending: not yet answered with a 2xx (retried with backoff); failed: retries ran out or the endpoint was disabled."),
    attempts: z.int().min(0).describe("Attempts made."),
    next_attempt_at: timestamp.optional().describe("When it is tried next, while pending."),
    last_attempt_at: timestamp.optional().describe("When it was last tried."),
    last_status: z.int().optional().describe("The HTTP status of the last attempt."),
    last_error: z.string().optional().describe("Why the last attempt got no HTTP status (refused target, timeout, connection error)."),
    created_at: timestamp.describe("When the event was queued for this endpoint."),
    delivered_at: timestamp.optional().describe("When a 2xx answered it."),
  })
  .meta({ id: "WebhookDelivery" });

export const FeedbackJson = z
  .object({
    id: z.string().describe("The feedback's id (`fbk_…`)."),
    object: z.literal("feedback").describe("Always `feedback`."),
    message: z.string().describe("What the client said."),
    action_id: z.string().optional().describe("The action it is about."),
    platform: z.string().optional().describe("The action's platform."),
    type: z.enum(ACTION_TYPES).optional().describe("The action's type."),
    error: z.object({ code: z.enum(ACTION_ERROR_CODES), message: z.string() }).optional().describe("The action's error when it had failed."),
    has_screenshot: z.boolean().describe("Whether a screenshot of the page at the failure is kept (admins: GET /v1/feedback/{id}/screenshot)."),
    created_at: timestamp.describe("When it was sent."),
  })
  .meta({ id: "Feedback" });
export type PublicEvent = z.infer<typeof EventJson>;
export type PublicWebhook = z.infer<typeof WebhookJson>;
export type PublicWebhookDelivery = z.infer<typeof WebhookDeliveryJson>;
export type PublicFeedback = z.infer<typeof FeedbackJson>;
