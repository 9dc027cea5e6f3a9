import { z } from "zod";
import { ACTION_TYPES } from "./actions.js";
import { CHALLENGE_KINDS } from "./challenges.js";
import { ACTION_ERROR_CODES, REQUEST_ERRORS, type RequestErrorCode } from "./errors.js";
import { ACTION_STATUSES } from "./status.js";

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
    error: z
      .object({
        code: z.enum(ACTION_ERROR_CODES).describe("Why it failed; next_step gives the recommended response to this code."),
        message: z.string().describe("What happened, in words for a person."),
      })
      .optional()
      .describe("Present when status is failed."),
    next_step: z
      .string()
      .optional()
      .describe("What to do now, naming this surface's operations: present when queued (what it waits for), needs_input (how to answer) or failed (the recommended response)."),
    result: freeFormObject().optional().describe("Present when status is succeeded: its shape depends on the type (GET /v1/platforms, list_platforms)."),
    cost: z.int().describe("Credits charged; 0 until the action has ended, and for free outcomes."),
    created_at: timestamp.describe("When it was created."),
    updated_at: timestamp.describe("When its status last changed."),
    finished_at: timestamp.optional().describe("When it ended; absent until then."),
  })
  .meta({ id: "Action" });

export const AccountJson = z
  .object({
    id: z.string().describe("The account's id (`acc_…`)."),
    object: z.literal("account").describe("Always `account`."),
    platform: z.string().describe("The platform it belongs to."),
    username: z.string().describe("The sign-in name on the platform."),
    status: z.enum(["new", "connected", "signed_out"]).describe("new: never signed in; connected: a session is saved; signed_out: the platform ended it."),
    has_password: z.boolean().describe("Whether a password is stored (it is never returned)."),
    has_totp_secret: z.boolean().describe("Whether a TOTP secret is stored (it is never returned)."),
    profile: z
      .object({ handle: z.string().describe("The signed-in user's handle."), name: z.string().describe("The signed-in user's display name.") })
      .optional()
      .describe("Who the saved session is signed in as; absent until the first sign-in."),
    created_at: timestamp.describe("When it was added."),
    updated_at: timestamp.describe("When it last changed."),
  })
  .meta({ id: "Account" });

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
export type PlatformReference = z.infer<typeof PlatformJson>;
