import { z } from "zod";
import { EVENT_TYPES, EventJson, FeedbackJson, WebhookDeliveryJson, WebhookJson, listOf } from "../../domain/public.js";
import { FeedbackInput } from "../../events/feedback.js";
import { defineRoute } from "../route.js";
import { errorResponses } from "./common.js";

const IdParams = z.strictObject({ id: z.string().min(1).max(200) });
const Page = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20).describe("Items per page, newest first (1–100, default 20)."),
  cursor: z.string().min(1).max(200).optional().describe("`next_cursor` of the previous page."),
});

/** Webhooks, the event stream and feedback (DESIGN §13). */
export const eventRoutes = [
  defineRoute({
    method: "post",
    path: "/v1/webhooks",
    tag: "events",
    summary: "Add a webhook endpoint",
    description:
      "Every event of the workspace (or of the types given) is POSTed to `url`, signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`) with the secret returned here once; " +
      "retried with backoff until a 2xx, in order per action. Private and loopback addresses are refused unless ACTION_SERVICE_WEBHOOK_ALLOW_PRIVATE=true. Admin keys.",
    body: z.strictObject({
      url: z.string().min(1).max(2_000).describe("An http(s) URL that answers 2xx to each event."),
      events: z.array(z.enum(EVENT_TYPES)).min(1).optional().describe("The event types to receive; every type when absent."),
    }),
    responses: { 201: { description: "The endpoint, with its signing secret (shown only now).", schema: WebhookJson }, ...errorResponses(400, 401, 403, 422, 429) },
    async handle({ principal, body, engine }) {
      return { status: 201, body: await engine.webhooks.create(principal, body) };
    },
  }),
  defineRoute({
    method: "get",
    path: "/v1/webhooks",
    tag: "events",
    summary: "List webhook endpoints",
    responses: { 200: { description: "Every endpoint of the workspace (never a secret).", schema: listOf(WebhookJson) }, ...errorResponses(401, 403, 429) },
    async handle({ principal, engine }) {
      return { status: 200, body: { data: await engine.webhooks.list(principal) } };
    },
  }),
  defineRoute({
    method: "delete",
    path: "/v1/webhooks/{id}",
    tag: "events",
    summary: "Delete a webhook endpoint",
    params: IdParams,
    responses: { 204: { description: "Deleted, with its deliveries." }, ...errorResponses(401, 403, 404, 429) },
    async handle({ principal, params, engine }) {
      await engine.webhooks.delete(principal, params.id);
      return { status: 204 };
    },
  }),
  defineRoute({
    method: "get",
    path: "/v1/webhooks/{id}/deliveries",
    tag: "events",
    summary: "An endpoint's delivery log",
    params: IdParams,
    query: Page,
    responses: { 200: { description: "Deliveries, newest event first.", schema: listOf(WebhookDeliveryJson) }, ...errorResponses(401, 403, 404, 422, 429) },
    async handle({ principal, params, query, engine }) {
      return { status: 200, body: await engine.webhooks.deliveries(principal, params.id, query) };
    },
  }),
  defineRoute({
    method: "post",
    path: "/v1/webhooks/{id}/deliveries/{delivery_id}/retry",
    tag: "events",
    summary: "Send a delivery again now",
    params: z.strictObject({ id: z.string().min(1).max(200), delivery_id: z.string().min(1).max(200) }),
    responses: { 202: { description: "Queued to be sent at once.", schema: WebhookDeliveryJson }, ...errorResponses(401, 403, 404, 409, 429) },
    async handle({ principal, params, engine }) {
      return { status: 202, body: await engine.webhooks.retryDelivery(principal, params.id, params.delivery_id) };
    },
  }),
  defineRoute({
    method: "get",
    path: "/v1/events",
    tag: "events",
    summary: "The event stream (Server-Sent Events)",
    description:
      "`text/event-stream` of the workspace's events as they commit (only the accounts the key may see): each message has `id` (the event id), `event` (its type) and `data` (the Event JSON). " +
      "Send `Last-Event-ID` to resume after an event (kept 7 days); without it the stream starts now. A comment line every 15 s keeps it open.",
    headers: [{ name: "Last-Event-ID", description: "Resume after this event id." }],
    responses: { 200: { description: "The stream; each `data` is one Event.", schema: EventJson }, ...errorResponses(401, 403, 429) },
    async handle({ principal, headers, signal, engine }) {
      const after = headers.get("last-event-id") ?? undefined;
      return { status: 200, events: await engine.events.stream(principal, { after: after?.trim() || undefined, signal }) };
    },
  }),
  defineRoute({
    method: "post",
    path: "/v1/feedback",
    tag: "events",
    summary: "Send feedback",
    description:
      "What the seed means by \"send feedback\" (after `unsupported`, or a `browser_error` that repeats): kept with the action's platform, type and error, and the page at the failure when one was kept. Any key.",
    body: FeedbackInput,
    responses: { 201: { description: "The feedback as kept.", schema: FeedbackJson }, ...errorResponses(400, 401, 403, 404, 422, 429) },
    async handle({ principal, body, engine }) {
      return { status: 201, body: await engine.feedback.send(principal, body) };
    },
  }),
  defineRoute({
    method: "get",
    path: "/v1/feedback",
    tag: "events",
    summary: "List feedback",
    query: Page,
    responses: { 200: { description: "The workspace's feedback, newest first (admin keys).", schema: listOf(FeedbackJson) }, ...errorResponses(401, 403, 422, 429) },
    async handle({ principal, query, engine }) {
      return { status: 200, body: await engine.feedback.list(principal, query) };
    },
  }),
  defineRoute({
    method: "get",
    path: "/v1/feedback/{id}/screenshot",
    tag: "events",
    summary: "The page at the failure a feedback is about",
    description: "`image/png`, kept (sealed) for `ui_changed` and `browser_error` failures. Admin keys of the workspace only.",
    params: IdParams,
    responses: { 200: { description: "The PNG." }, ...errorResponses(401, 403, 404, 429) },
    async handle({ principal, params, engine }) {
      return { status: 200, bytes: { body: await engine.feedback.screenshot(principal, params.id), type: "image/png" } };
    },
  }),
];
