import { z } from "zod";
import { ActionJson, listOf } from "../../domain/public.js";
import { isTerminal } from "../../domain/status.js";
import { AnswerInput, CreateActionInput, ListActionsQuery } from "../../engine/actions.js";
import type { Engine } from "../../engine/engine.js";
import { IdempotencyKey } from "../../engine/idempotency.js";
import { parse } from "../request-parts.js";
import type { ActionRecord } from "../../store/records.js";
import { defineRoute } from "../route.js";
import { errorResponses } from "./common.js";

const IdParams = z.strictObject({ id: z.string().min(1).max(200) });
const WaitQuery = z.strictObject({
  wait: z.coerce.number().min(0).max(30).default(0).describe("Hold the response up to this many seconds until the action is needs_input or has ended."),
});
const actionResponses = {
  200: { description: "The action has ended (succeeded, failed or canceled). A failed action is still a 200: read `status` and `error`.", schema: ActionJson },
  202: { description: "The action has not ended yet (queued, running or needs_input).", schema: ActionJson },
};

/** 202 while the action has not ended, 200 once it has. */
/** The request's abort signal, only when the response waits: the server builds it on first use, at a cost most requests need not pay. */
function signalIfWaiting(input: { query: { wait: number }; signal: AbortSignal }): AbortSignal | undefined {
  return input.query.wait > 0 ? input.signal : undefined;
}

async function respond(engine: Engine, action: ActionRecord): Promise<{ status: number; body?: unknown; json?: string }> {
  return isTerminal(action.status) ? { status: 200, json: await engine.presentEnded(action) } : { status: 202, body: await engine.present(action) };
}

export const actionRoutes = [
  defineRoute({
    method: "post",
    path: "/v1/actions",
    tag: "actions",
    summary: "Run an action",
    description:
      "Creates an action for an account. Params are validated first (a bad shape is a 422 and creates nothing). The price is held until the action ends. With `Idempotency-Key`, a retry of the same request returns the first response (`Idempotency-Replayed: true`).",
    body: CreateActionInput,
    query: WaitQuery,
    headers: [{ name: "Idempotency-Key", description: "Up to 255 characters; the same key and body run the action once. Kept at least 24 hours." }],
    responses: { ...actionResponses, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
    async handle(input) {
      const { principal, body, query, headers, engine } = input;
      // Without a wait, the action as created is the answer (202, queued): no second read, and no
      // answer that depends on whether its run was quicker than that read.
      const settle = async (action: ActionRecord): Promise<ActionRecord> => (query.wait > 0 ? engine.waitFor(action.id, query.wait, signalIfWaiting(input)) : action);
      const key = headers.get("idempotency-key");
      if (key === null) return respond(engine, await settle(await engine.createAction(principal, body)));
      const { action, replayed } = await engine.createActionOnce(principal, parse(IdempotencyKey, key, "header"), body, settle);
      const replayHeader: Record<string, string> = replayed ? { "Idempotency-Replayed": "true" } : {};
      return { ...(await respond(engine, action)), headers: replayHeader };
    },
  }),
  defineRoute({
    method: "get",
    path: "/v1/actions",
    tag: "actions",
    summary: "List actions",
    description: "Newest first. Filter by `account_id` and `status`; follow `next_cursor` for the next page.",
    query: ListActionsQuery,
    responses: { 200: { description: "A page of actions.", schema: listOf(ActionJson) }, ...errorResponses(401, 403, 404, 422, 429) },
    async handle({ principal, query, engine }) {
      const page = await engine.listActions(principal, query);
      const data = await Promise.all(page.data.map((action) => engine.present(action)));
      return { status: 200, body: { data, ...(page.next_cursor ? { next_cursor: page.next_cursor } : {}) } };
    },
  }),
  defineRoute({
    method: "get",
    path: "/v1/actions/{id}",
    tag: "actions",
    summary: "Get an action",
    params: IdParams,
    query: WaitQuery,
    responses: { ...actionResponses, ...errorResponses(401, 403, 404, 422, 429) },
    async handle(input) {
      const { principal, params, query, engine } = input;
      const action = await engine.getAction(principal, params.id);
      // Without a wait, the action just read is the answer: no second read.
      return respond(engine, query.wait > 0 ? await engine.waitFor(action.id, query.wait, signalIfWaiting(input)) : action);
    },
  }),
  defineRoute({
    method: "post",
    path: "/v1/actions/{id}/answer",
    tag: "actions",
    summary: "Answer a challenge",
    description:
      "Answers the challenge of an action at needs_input. Code kinds (two_factor_code, email_code, sms_code, other) only; device_approval and captcha are a 409 pointing at `sign_in_url`. A refused answer brings the action back to needs_input with a message; three refusals fail it with login_failed.",
    params: IdParams,
    query: WaitQuery,
    body: AnswerInput,
    responses: { ...actionResponses, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
    async handle(input) {
      const { principal, params, query, body, engine } = input;
      const action = await engine.answer(principal, params.id, body.answer);
      return respond(engine, await engine.waitFor(action.id, query.wait, signalIfWaiting(input)));
    },
  }),
  defineRoute({
    method: "post",
    path: "/v1/actions/{id}/cancel",
    tag: "actions",
    summary: "Cancel an action",
    description: "Cancels a queued, running or needs_input action; its held credits are released. An action that has ended is a 409.",
    params: IdParams,
    responses: { 200: { description: "The canceled action.", schema: ActionJson }, ...errorResponses(401, 403, 404, 409, 429) },
    async handle({ principal, params, engine }) {
      return { status: 200, body: await engine.present(await engine.cancel(principal, params.id)) };
    },
  }),
];

