import type { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { AppError } from "../domain/errors.js";
import type { Engine } from "../engine/engine.js";
import { readSmsText } from "./sms-body.js";

/** The largest request taken: a text is short; a gateway's form adds a few fields. */
const MAX_BYTES = 64 * 1024;

/**
 * Each account's SMS URL (DESIGN §15): `POST /inbound/sms/<token>` with `{"from"?, "text"}` or the
 * form fields `From` and `Body`. The token is the only credential (≥ 128 bits, stored hashed); an
 * unknown or rotated-away token is 404 and nothing is kept.
 */
export function mountSmsUrl(app: Hono, engine: Engine): void {
  // Hono's limit counts a chunked body as it arrives too, not only a Content-Length.
  const sizeLimit = bodyLimit({
    maxSize: MAX_BYTES,
    onError: () => {
      throw new AppError("malformed_request", `The request body is larger than ${MAX_BYTES} bytes.`, { max_bytes: MAX_BYTES });
    },
  });
  app.post("/inbound/sms/:token", sizeLimit, async (c) => {
    const accountId = await engine.inbox.accountOfSmsToken(c.req.param("token"));
    if (!accountId) throw new AppError("not_found", "No inbox has this SMS URL (it may have been rotated).");
    const { from, text } = await readSmsText(c);
    const message = await engine.inbox.receive(accountId, { channel: "sms", source: "sms_url", from, text });
    return c.json({ id: message.id, received_at: message.received_at }, 202);
  });
}
