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
    kind: z.enum(CHALLENGE_KINDS),
    message: z.string().describe("What is asked, in the platform's words."),
    expires_at: timestamp.describe("Deadline for answering; after it the action fails with challenge_timeout."),
    sign_in_url: z.url().describe("Live browser for this challenge; needs no login, valid 30 minutes."),
  })
  .meta({ id: "Challenge" });

export const ActionJson = z
  .object({
    id: z.string(),
    object: z.literal("action"),
    account_id: z.string(),
    platform: z.string(),
    type: z.enum(ACTION_TYPES),
    params: freeFormObject().describe("The params the action was created with."),
    status: z.enum(ACTION_STATUSES),
    challenge: ChallengeJson.optional().describe("Present when status is needs_input."),
    error: z
      .object({ code: z.enum(ACTION_ERROR_CODES), message: z.string() })
      .optional()
      .describe("Present when status is failed."),
    next_step: z
      .string()
      .optional()
      .describe("What to do now, naming this surface's operations: present when queued (what it waits for), needs_input (how to answer) or failed (the recommended response)."),
    result: freeFormObject().optional().describe("Present when status is succeeded: its shape depends on the type (GET /v1/platforms, list_platforms)."),
    cost: z.int().describe("Credits charged; 0 until the action has ended, and for free outcomes."),
    created_at: timestamp,
    updated_at: timestamp,
    finished_at: timestamp.optional(),
  })
  .meta({ id: "Action" });

export const AccountJson = z
  .object({
    id: z.string(),
    object: z.literal("account"),
    platform: z.string(),
    username: z.string(),
    status: z.enum(["new", "connected", "signed_out"]).describe("new: never signed in; connected: a session is saved; signed_out: the platform ended it."),
    has_password: z.boolean(),
    has_totp_secret: z.boolean(),
    profile: z.object({ handle: z.string(), name: z.string() }).optional(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: "Account" });

export const ErrorJson = z
  .object({
    error: z.object({
      code: z.enum(Object.keys(REQUEST_ERRORS) as [RequestErrorCode, ...RequestErrorCode[]]),
      message: z.string(),
      details: freeFormObject().optional(),
    }),
  })
  .meta({ id: "Error" });

export const CreditsJson = z.object({ balance: z.int().min(0) }).meta({ id: "Credits" });

export const PlatformJson = z
  .object({
    name: z.string(),
    title: z.string(),
    description: z.string(),
    actions: z.array(
      z.object({
        type: z.enum(ACTION_TYPES),
        description: z.string(),
        price: z.int().describe("Credits per action."),
        params: freeFormObject().describe("JSON Schema of the params."),
      }),
    ),
  })
  .meta({ id: "Platform" });

export function listOf<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), next_cursor: z.string().optional().describe("Absent on the last page.") });
}

export type PublicAction = z.infer<typeof ActionJson>;
export type PublicAccount = z.infer<typeof AccountJson>;
export type PlatformReference = z.infer<typeof PlatformJson>;
