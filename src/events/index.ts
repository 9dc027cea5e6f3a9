/**
 * Events (DESIGN §13): webhook endpoints and their delivery, the SSE stream, and feedback. The
 * outbox they read is written inside the engine's own transactions: it is a room of its own
 * (`outbox/`), below the engine, which this front stands above.
 */
export { Webhooks, type WebhookOptions } from "./webhooks.js";
export { EventFeed } from "./event-stream.js";
export { Feedback, FeedbackInput } from "./feedback.js";
