import { z } from "zod";
import { ActionJson, listOf, type PublicAction } from "../../domain/public.js";
import { AnswerInput, CreateActionInput, ListActionsQuery } from "../../engine/actions.js";
import { IdempotencyKey } from "../../engine/idempotency.js";
import { describeAction, describeActionList } from "../describe.js";
import { ActionOutput, actionId, waitSeconds } from "../schemas.js";
import { defineTool, type ToolContext, type ToolResult } from "../tool.js";

/** The action as a tool's result: its JSON and summary. */
function actionResult(action: PublicAction): ToolResult<PublicAction> {
  return { structured: action, text: describeAction(action), action };
}

/** Waits for the action as asked and returns it with its summary. */
async function settle(context: ToolContext, id: string, seconds: number, note?: string): Promise<ToolResult<PublicAction>> {
  const action = await context.engine.present(await context.waitFor(id, seconds), "mcp");
  return { structured: action, text: note ? `${note}\n${describeAction(action)}` : describeAction(action), action };
}

export const actionTools = [
  defineTool({
    name: "run_action",
    title: "Run an action",
    description:
      "Runs an action (connect, post, lookup_person, lookup_conversation, send_message, browser_steps, routine) as a connected account, in that account's own browser, and waits up to wait_seconds for it. " +
        'A routine (list_routines) replays saved steps with new params: type "routine", params {"routine": name, "params": {…}}; prefer it to browser_steps when one does the task. ' +
      "Returns the action: read `status`. At needs_input, `challenge` says what the sign-in asks: answer code kinds with answer_challenge, or open `challenge.sign_in_url` (live browser). " +
      "A failed action is a normal result: `error.code` and the text say what to do next. Still queued or running: call get_action. " +
      "See list_platforms for each type's params and price (credits are held at start and charged when it ends). " +
      "Pass idempotency_key to make a retry safe: the same key and arguments run the action once.",
    input: CreateActionInput.extend({
      account_id: CreateActionInput.shape.account_id.describe("The account to act as (`acc_…`), from list_accounts or connect_account."),
      type: CreateActionInput.shape.type.describe("The action type; list_platforms says which types the account's platform supports."),
      params: CreateActionInput.shape.params.describe("The action's params; their JSON Schema per type is in list_platforms (e.g. post: {\"text\": \"…\"})."),
      idempotency_key: IdempotencyKey.optional().describe("Any unique string (1–255 printable ASCII characters); retrying with the same key and arguments returns the same action instead of running it twice."),
      wait_seconds: waitSeconds,
    }),
    output: ActionOutput,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    resume: actionResult,
    async handle({ idempotency_key, wait_seconds, ...body }, context) {
      const { engine, principal } = context;
      if (idempotency_key === undefined) return settle(context, (await engine.createAction(principal, body)).id, wait_seconds);
      const { action, replayed } = await engine.createActionOnce(principal, idempotency_key, body);
      return settle(context, action.id, wait_seconds, replayed ? `This idempotency_key already ran action ${action.id}; it was not run again.` : undefined);
    },
  }),
  defineTool({
    name: "answer_challenge",
    title: "Answer a sign-in challenge",
    description:
      "Answers the challenge of an action at needs_input with the code or reply it asks for (kinds two_factor_code, email_code, sms_code, other), then waits up to wait_seconds. " +
      "device_approval and captcha cannot be answered here: open the challenge's sign_in_url instead. " +
      "A refused answer brings the action back to needs_input with a message saying so (same deadline); after 3 refusals it fails with login_failed.",
    input: AnswerInput.extend({ action_id: actionId, wait_seconds: waitSeconds }),
    output: ActionOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    resume: actionResult,
    async handle({ action_id, answer, wait_seconds }, context) {
      const action = await context.engine.answer(context.principal, action_id, answer);
      return settle(context, action.id, wait_seconds);
    },
  }),
  defineTool({
    name: "get_action",
    title: "Get an action",
    description:
      "Returns an action, waiting up to wait_seconds (0 for no wait) until it is needs_input or has ended. Use it to follow an action that was still queued or running, or after a challenge was cleared in the live browser.",
    input: z.strictObject({ action_id: actionId, wait_seconds: waitSeconds }),
    output: ActionOutput,
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    resume: actionResult,
    async handle({ action_id, wait_seconds }, context) {
      return settle(context, (await context.engine.getAction(context.principal, action_id)).id, wait_seconds);
    },
  }),
  defineTool({
    name: "cancel_action",
    title: "Cancel an action",
    description:
      "Cancels an action that is queued, running or at needs_input; its held credits are released and it costs nothing. An action that has already ended cannot be canceled (request error `conflict`).",
    input: z.strictObject({ action_id: actionId }),
    output: ActionOutput,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    async handle({ action_id }, { engine, principal }) {
      const action = await engine.present(await engine.cancel(principal, action_id), "mcp");
      return { structured: action, text: describeAction(action), action };
    },
  }),
  defineTool({
    name: "list_actions",
    title: "List actions",
    description:
      "Lists actions, newest first, optionally filtered by account_id and status. When `next_cursor` is present, pass it as cursor for the next page.",
    input: ListActionsQuery,
    output: listOf(ActionJson),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async handle(query, { engine, principal }) {
      const page = await engine.listActions(principal, query);
      const data = await Promise.all(page.data.map((action) => engine.present(action, "mcp")));
      return {
        structured: { data, ...(page.next_cursor ? { next_cursor: page.next_cursor } : {}) },
        text: describeActionList(data, page.next_cursor),
      };
    },
  }),
];
