import type { Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { z } from "zod";
import { AppError } from "../domain/errors.js";
import type { Engine } from "../engine/engine.js";
import { MAX_MESSAGE_CHARS } from "../engine/inbox/index.js";

/** A text as an SMS gateway or a phone's forwarding rule sends it: JSON, or the form fields gateways use. */
const JsonText = z.object({ from: z.string().max(200).optional(), text: z.string().min(1).max(MAX_MESSAGE_CHARS) });
const FormText = z.object({ From: z.string().max(200).optional(), Body: z.string().min(1).max(MAX_MESSAGE_CHARS) });
/** The largest request taken: a text is short; a gateway's form adds a few fields. */
const MAX_BYTES = 64 * 1024;

/**
 * Each account's SMS URL (DESIGN §15): `POST /inbound/sms/<token>` with `{"from"?, "text"}` or the
 * form fields `From` and `Body`. The token is the only credential (≥ 128 bits, stored hashed); an
 * unknown or rotated-away token is 404 and nothing is kept.
 */
export function mountSmsUrl(app: Hono, engine: Engine): void {
  // Hono's limit counts a chunked body as it arrives too, not only a Content-Length.
  const limit = bodyLimit({
    maxSize: MAX_BYTES,
    onError: () => {
      throw new AppError("malformed_request", `The request body is larger than ${MAX_BYTES} bytes.`, { max_bytes: MAX_BYTES });
    },
  });
  app.post("/inbound/sms/:token", limit, async (c) => {
    const accountId = await engine.inbox.accountOfSmsToken(c.req.param("token"));
    if (!accountId) throw new AppError("not_found", "No inbox has this SMS URL (it may have been rotated).");
    const { from, text } = await readText(c);
    const message = await engine.inbox.receive(accountId, { channel: "sms", source: "sms_url", from, text });
    return c.json({ id: message.id, received_at: message.received_at }, 202);
  });
}

async function readText(c: Context): Promise<{ from: string | undefined; text: string }> {
  const type = c.req.header("content-type") ?? "";
  if (type.includes("application/json")) {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      throw new AppError("malformed_request", "The request body is not valid JSON.");
    }
    const parsed = JsonText.safeParse(body);
    if (!parsed.success) throw new AppError("invalid_request", 'Send {"from"?: string, "text": string}.', { issues: parsed.error.issues.map((issue) => issue.message) });
    return { from: parsed.data.from, text: parsed.data.text };
  }
  if (type.includes("application/x-www-form-urlencoded") || type.includes("multipart/form-data")) {
    const parsed = FormText.safeParse(await c.req.parseBody());
    if (!parsed.success) throw new AppError("invalid_request", "Send the form fields Body (the text) and From.", { issues: parsed.error.issues.map((issue) => issue.message) });
    return { from: parsed.data.From, text: parsed.data.Body };
  }
  throw new AppError("malformed_request", 'Send JSON {"from"?, "text"} or the form fields From and Body.', { content_type: type });
}
