/**
 * Events (DESIGN §13): webhook endpoints and their delivery, the SSE stream, and feedback: what
 * reads the outbox. The outbox itself is written inside the engine's own transactions, so it lives
 * below them, in `engine/outbox/`; this room stands above the engine.
 */
export { Webhooks, type WebhookOptions } from "./webhooks.js";
export { EventFeed } from "./event-stream.js";
export { Feedback, FeedbackInput } from "./feedback.js";
