import { z } from "zod";
import { AccountJson, ActionJson, CreditsJson, FeedbackJson } from "../domain/public.js";

/** Below clients' usual 60 s request timeout (DESIGN §6). */
export const MAX_WAIT_SECONDS = 50;
export const DEFAULT_WAIT_SECONDS = 20;

export const waitSeconds = z
  .int()
  .min(0)
  .default(DEFAULT_WAIT_SECONDS)
  .describe(
    `Hold the result up to this many seconds (default ${DEFAULT_WAIT_SECONDS}; more than ${MAX_WAIT_SECONDS} is taken as ${MAX_WAIT_SECONDS}) until the action is needs_input or has ended; if it is still queued or running after that, call get_action again.`,
  );

export const actionId = z.string().min(1).max(200).describe("The action's id (`act_…`), from run_action or list_actions.");
export const accountId = z.string().min(1).max(200).describe("The account's id (`acc_…`), from list_accounts or connect_account.");

/**
 * The public JSON schemas with their top level inlined: an MCP output schema must be
 * `type: "object"` at the top, and a schema registered with an id would become a `$ref`
 * (nested ids stay as definitions).
 */
export const ActionOutput = z.object(ActionJson.shape);
export const AccountOutput = z.object(AccountJson.shape);
export const CreditsOutput = z.object(CreditsJson.shape);
export const FeedbackOutput = z.object(FeedbackJson.shape);

/** An owner sign-in link, as POST /v1/accounts/{id}/sign-in-links returns it. */
export const SignInLinkOutput = z.object({
  url: z.url().describe("The live-browser page where the owner signs in by hand (no login needed)."),
  expires_at: z.iso.datetime().describe("The link works until then (30 minutes)."),
});
