import { Hono, type Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { streamSSE } from "hono/streaming";
import { z } from "zod";
import { AppError } from "../domain/errors.js";
import { MAX_JSON_DEPTH, jsonTextTooDeep } from "../domain/json.js";
import type { Principal } from "../domain/keys.js";
import { systemClock, type Clock } from "../engine/clock.js";
import type { Engine } from "../engine/engine.js";
import { RateLimiter, callerOf, tooManyRequests } from "../engine/access/index.js";
import { asAppError } from "../engine/request-errors.js";
import { silentLogger, type Logger } from "../engine/logger.js";
import { buildOpenApi } from "./openapi.js";
import type { RouteInput } from "./route.js";
import { bearerKey, parse } from "./request-parts.js";
import { ROUTES } from "./routes/index.js";

export interface AppOptions {
  engine: Engine;
  clock?: Clock;
  logger?: Logger;
  /** The per-key limiter every surface shares; else one of `rateLimitPerMinute` (600). */
  limiter?: RateLimiter;
  rateLimitPerMinute?: number;
  bodyLimitBytes?: number;
  /** False until the service can take actions (GET /healthz answers 503 until then). */
  isReady?: () => boolean;
  /** Mounts more surfaces (MCP over HTTP, live browser) on the same server. */
  extend?: (app: Hono) => void;
}

export const DEFAULT_BODY_LIMIT = 1024 * 1024;
/** Event streams one key may hold open at once (DESIGN §5: bounded per key). */
export const MAX_STREAMS_PER_KEY = 5;
const HEARTBEAT_MS = 15_000;

/** The REST adapter: routes as data, one error renderer, no SQL and no Playwright. */
export function createApp(options: AppOptions): Hono {
  const { engine } = options;
  const logger = options.logger ?? silentLogger;
  const limiter = options.limiter ?? new RateLimiter(options.rateLimitPerMinute ?? 600, options.clock ?? systemClock);
  const limit = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT;
  const app = new Hono();
  const streams = new Map<string, number>();

  app.onError((error, c) => {
    const known = asAppError(error);
    if (known) {
      const retryAfter = known.details?.retry_after;
      if (known.code === "service_unavailable" && typeof retryAfter === "number") c.header("Retry-After", String(retryAfter));
      return c.json(known.toJSON(), known.httpStatus as 400);
    }
    logger.error({ err: error, method: c.req.method, path: redactedPath(c.req.path) }, "request failed");
    return c.json({ error: { code: "internal_error", message: "Something went wrong on our side; the request may be retried." } }, 500);
  });
  app.notFound((c) => c.json(new AppError("not_found", `No route ${c.req.method} ${redactedPath(c.req.path)}.`).toJSON(), 404));

  app.get("/healthz", (c) => ((options.isReady?.() ?? true) ? c.json({ ok: true }) : c.json({ ok: false }, 503)));
  // Built on first request, not at every start (≈ 100 ms of turning schemas into JSON Schema).
  let openApi: ReturnType<typeof buildOpenApi> | undefined;
  app.get("/v1/openapi.json", (c) => c.json((openApi ??= buildOpenApi(ROUTES))));

  const tooLarge = (c: Context): never => {
    // The rest of the body stays unread: this connection cannot carry another request.
    c.header("Connection", "close");
    throw new AppError("malformed_request", `The request body is larger than ${limit} bytes.`, { max_bytes: limit });
  };
  const chunkedLimit = bodyLimit({ maxSize: limit, onError: tooLarge });
  // A GET or HEAD has no body: neither its stream nor this check is ever built for one.
  app.on(["POST", "PUT", "PATCH", "DELETE"], "/v1/*", async (c, next) => {
    const length = c.req.header("content-length");
    // With a Content-Length, never touch the body stream here: an unread body is then drained by the server.
    if (length !== undefined && c.req.header("transfer-encoding") === undefined) return Number(length) > limit ? tooLarge(c) : next();
    return chunkedLimit(c, next);
  });
  for (const route of ROUTES) {
    app.on(route.method.toUpperCase(), route.path.replace(/\{(\w+)\}/g, ":$1"), async (c) => {
      const principal = await authenticate(c, engine);
      const wait = await limiter.take(callerOf(principal));
      if (wait > 0) {
        c.header("Retry-After", String(wait));
        throw tooManyRequests(wait);
      }
      const params = parse(route.params, c.req.param(), "path");
      const query = parse(route.query ?? NO_QUERY, c.req.query(), "query");
      const response = await route.handle(new Input(c, engine, principal, params, query, route.body ? parse(route.body, await readJson(c), "body") : undefined));
      for (const [name, value] of Object.entries(response.headers ?? {})) c.header(name, value);
      if (response.events) return stream(c, callerOf(principal), response.events);
      if (response.json !== undefined) return c.body(response.json, response.status as 200, { "Content-Type": "application/json" });
      if (response.bytes) return c.body(new Uint8Array(response.bytes.body), response.status as 200, { "Content-Type": response.bytes.type, "Cache-Control": "no-store" });
      return response.body === undefined ? c.body(null, response.status as 204) : c.json(response.body, response.status as 200);
    });
  }
  options.extend?.(app);
  return app;

  /** Sends `events` as Server-Sent Events until the client goes; a comment now and then keeps proxies from closing it. */
  function stream(c: Context, caller: string, events: AsyncIterable<{ id: string; type: string }>): Response {
    const open = streams.get(caller) ?? 0;
    if (open >= MAX_STREAMS_PER_KEY) throw new AppError("too_many_requests", `This key already holds ${MAX_STREAMS_PER_KEY} event streams open; close one first.`, { retry_after: 5 });
    streams.set(caller, open + 1);
    return streamSSE(c, async (sse) => {
      const heartbeat = setInterval(() => void sse.write(": keep-alive\n\n").catch(() => undefined), HEARTBEAT_MS);
      try {
        await sse.write(": connected\n\n");
        for await (const event of events) await sse.writeSSE({ id: event.id, event: event.type, data: JSON.stringify(event) });
      } finally {
        clearInterval(heartbeat);
        const left = (streams.get(caller) ?? 1) - 1;
        if (left > 0) streams.set(caller, left);
        else streams.delete(caller);
      }
    });
  }
}

const NO_QUERY = z.strictObject({});

/** Live links and SMS URLs carry their credential in the path: it is in no log line and no error. */
const CAPABILITY_IN_PATH = /\/(live|inbound\/+sms)\/+[^/]+/gi;

/** `path` with the credential of a capability URL replaced by `[redacted]`. */
function redactedPath(path: string): string {
  return path.replace(CAPABILITY_IN_PATH, (_, surface: string) => `/${surface}/[redacted]`);
}

/** A route's input; headers and the abort signal are built on first use (most routes read neither, and the server makes each on demand). */
class Input implements RouteInput<unknown, unknown, unknown> {
  constructor(
    readonly context: Context,
    readonly engine: Engine,
    readonly principal: Principal,
    readonly params: unknown,
    readonly query: unknown,
    readonly body: unknown,
  ) {}

  get headers(): Headers {
    return this.context.req.raw.headers;
  }

  get signal(): AbortSignal {
    return this.context.req.raw.signal;
  }
}

async function authenticate(c: Context, engine: Engine): Promise<Principal> {
  const key = bearerKey(c.req.header("authorization"));
  if (!key) throw new AppError("unauthorized", "Send an API key as `Authorization: Bearer <key>`.");
  const principal = await engine.keys.authenticate(key);
  if (!principal) throw new AppError("unauthorized", "The API key is not valid.");
  return principal;
}

async function readJson(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (jsonTextTooDeep(text)) throw new AppError("malformed_request", `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`, { max_depth: MAX_JSON_DEPTH });
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new AppError("malformed_request", "The request body is not valid JSON.");
  }
}
