import type { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { AppError } from "../domain/errors.js";
import type { Clock } from "../engine/clock.js";
import type { Engine } from "../engine/engine.js";
import { readSmsText } from "./sms-body.js";
import { SMS_BURST, SMS_TEXTS_PER_MINUTE, SMS_TRACKED_INBOXES, SmsRateLimit, type SmsLimits } from "./sms-limit.js";

/** The largest request taken: a text is short; a gateway's form adds a few fields. */
const MAX_BYTES = 64 * 1024;

/** How much the SMS URLs take (defaults: 30 texts a minute per inbox, 30 at once); the clock is the engine's unless given. */
export interface SmsUrlOptions extends Partial<SmsLimits> {
  clock?: Clock;
}

/**
 * Each account's SMS URL (DESIGN §15): `POST /inbound/sms/<token>` with `{"from"?, "text"}` or the
 * form fields `From` and `Body`. The token is the only credential (≥ 128 bits, stored hashed); an
 * unknown or rotated-away token is 404 and nothing is kept. Each inbox takes a bounded number of
 * texts a minute (429 + Retry-After past it). The token is in no error and no log line: the REST
 * error handler logs this path redacted.
 */
export function mountSmsUrl(app: Hono, engine: Engine, options: SmsUrlOptions = {}): void {
  const limit = new SmsRateLimit(
    { textsPerMinute: options.textsPerMinute ?? SMS_TEXTS_PER_MINUTE, burst: options.burst ?? SMS_BURST, trackedInboxes: options.trackedInboxes ?? SMS_TRACKED_INBOXES },
    options.clock ?? engine.core.lifecycle.clock,
  );
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
    // Counted before the body is read: a flood of broken bodies uses up the limit too.
    const wait = limit.take(accountId);
    if (wait > 0) {
      c.header("Retry-After", String(wait));
      throw new AppError("too_many_requests", `Too many texts to this SMS URL; retry in ${wait} s.`, { retry_after: wait });
    }
    const { from, text } = await readSmsText(c);
    const message = await engine.inbox.receive(accountId, { channel: "sms", source: "sms_url", from, text });
    // How many older unused messages the inbox dropped to keep this one (its quota), when any.
    return c.json({ id: message.id, received_at: message.received_at, ...(message.dropped > 0 ? { dropped: message.dropped } : {}) }, 202);
  });
}
