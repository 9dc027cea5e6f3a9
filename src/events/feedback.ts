import { z } from "zod";
import { AppError } from "../domain/errors.js";
import type { Principal } from "../domain/keys.js";
import type { PublicFeedback } from "../domain/public.js";
import type { FeedbackRecord } from "../store/index.js";
import { requirePermission, visibleAction } from "../engine/access/index.js";
import type { EngineCore } from "../engine/core.js";
import { newId } from "../engine/ids.js";

/** `POST /v1/feedback` and MCP `send_feedback`: one schema for both. */
export const FeedbackInput = z.strictObject({
  message: z.string().trim().min(1).max(5_000).describe("What went wrong or what is missing, in words for the people who run this service."),
  action_id: z.string().min(1).max(200).optional().describe("The action it is about (`act_…`): its platform, type, error and a screenshot of the page at the failure are kept with it."),
});
export type FeedbackInput = z.infer<typeof FeedbackInput>;

/**
 * Feedback (the seed's "send feedback", DESIGN §13): any key may send it about what it may see;
 * stored with the action's platform, type and error, the page at failure already kept (sealed).
 */
export async function sendFeedback(core: EngineCore, principal: Principal, input: FeedbackInput): Promise<PublicFeedback> {
  requirePermission(principal, "read");
  const action = input.action_id === undefined ? undefined : await visibleAction(core.store, principal, input.action_id);
  const id = newId("fbk");
  await core.store.feedback.insert({
    id,
    workspace_id: principal.workspaceId,
    key_id: principal.keyId,
    message: input.message,
    action_id: action?.id,
    platform: action?.platform,
    type: action?.type,
    error_code: action?.error_code,
    error_message: action?.error_code ? action.error_message : undefined,
    created_at: core.lifecycle.now(),
  });
  return presentFeedback((await core.store.feedback.get(id))!);
}

/** The workspace's feedback, newest first (admins). */
export async function listFeedback(core: EngineCore, principal: Principal, options: { limit: number; cursor?: string | undefined }): Promise<{ data: PublicFeedback[]; next_cursor?: string }> {
  requirePermission(principal, "read_feedback");
  const before = options.cursor === undefined ? undefined : parseCursor(options.cursor);
  const rows = await core.store.feedback.list(principal.workspaceId, options.limit + 1, before, principal.accountIds);
  const page = rows.slice(0, options.limit);
  const last = page.at(-1);
  return { data: page.map(presentFeedback), ...(rows.length > options.limit && last ? { next_cursor: `${last.created_at}|${last.id}` } : {}) };
}

function parseCursor(cursor: string): { created_at: string; id: string } {
  const [createdAt, id] = cursor.split("|");
  if (!createdAt || !id) throw new AppError("invalid_request", "cursor is not one this list gave.", { cursor });
  return { created_at: createdAt, id };
}

/** The page at the failure of the action a feedback is about, as PNG (admins of its workspace only). */
export async function feedbackScreenshot(core: EngineCore, principal: Principal, feedbackId: string): Promise<Buffer> {
  requirePermission(principal, "read_feedback");
  const feedback = await core.store.feedback.get(feedbackId);
  if (!feedback || feedback.workspace_id !== principal.workspaceId) throw new AppError("not_found", "No such feedback.", { feedback_id: feedbackId });
  // A key limited to some accounts sees the pages of those accounts only.
  const accountId = feedback.action_id ? (await core.store.actions.get(feedback.action_id))?.account_id : undefined;
  if (principal.accountIds && (!accountId || !principal.accountIds.includes(accountId))) {
    throw new AppError("forbidden", "This key may not see feedback about accounts outside its allow-list.", { feedback_id: feedbackId });
  }
  const png = feedback.action_id ? await core.store.feedback.screenshot(feedback.action_id) : undefined;
  if (!png) throw new AppError("not_found", "No screenshot was kept for this feedback's action (only ui_changed and browser_error failures keep one).", { feedback_id: feedbackId });
  return png;
}

function presentFeedback(feedback: FeedbackRecord): PublicFeedback {
  return {
    id: feedback.id,
    object: "feedback",
    message: feedback.message,
    ...(feedback.action_id ? { action_id: feedback.action_id } : {}),
    ...(feedback.platform ? { platform: feedback.platform } : {}),
    ...(feedback.type ? { type: feedback.type as PublicFeedback["type"] & string } : {}),
    ...(feedback.error_code ? { error: { code: feedback.error_code as NonNullable<PublicFeedback["error"]>["code"], message: feedback.error_message ?? "" } } : {}),
    has_screenshot: feedback.has_screenshot,
    created_at: feedback.created_at,
  };
}

/** Feedback about actions (DESIGN §13), and the pages kept with it. */
export class Feedback {
  constructor(private readonly core: EngineCore) {}

  send(principal: Principal, input: FeedbackInput): Promise<PublicFeedback> {
    return sendFeedback(this.core, principal, input);
  }
  list(principal: Principal, options: { limit: number; cursor?: string | undefined }): Promise<{ data: PublicFeedback[]; next_cursor?: string }> {
    return listFeedback(this.core, principal, options);
  }
  screenshot(principal: Principal, feedbackId: string): Promise<Buffer> {
    return feedbackScreenshot(this.core, principal, feedbackId);
  }
}
