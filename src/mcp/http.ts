import { randomUUID } from "node:crypto";
import type { McpHttpHandler, McpServer, WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import type { Context, Hono } from "hono";
import { bearerKey } from "../api/request-parts.js";
import { checkHostAndOrigin, type OriginPolicy } from "../api/origin.js";
import { AppError } from "../domain/errors.js";
import type { Principal } from "../domain/keys.js";
import type { Engine } from "../engine/engine.js";
import type { Logger } from "../engine/logger.js";
import { callerOf, tooManyRequests, type RateLimiter } from "../engine/access/index.js";
import { SessionEventStore } from "./event-store.js";
import { followingBus } from "./following-bus.js";
import { actionUri } from "./resources.js";

export interface McpHttpOptions extends OriginPolicy {
  logger: Logger;
  /** The per-key limiter every surface shares: each request to /mcp takes from it. */
  limiter: RateLimiter;
  /** A session unused this long is closed (default 10 minutes); the client then starts a new one. */
  sessionIdleMs?: number;
  /** Sessions one key may hold open (default 8); a new one evicts the key's least recently used. */
  maxSessionsPerKey?: number;
}

/** The MCP endpoint's sessions, for shutdown and tests. */
export interface McpHttpEndpoint {
  readonly sessionCount: number;
  /** Ends every session (closing their streams, so the HTTP server can stop). */
  close(): Promise<void>;
}

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  close(): Promise<void>;
  /** The key that opened it (its rate-limit caller). */
  caller: string;
  lastUsed: number;
}

export const MCP_PATH = "/mcp";
const DEFAULT_IDLE_MS = 10 * 60 * 1000;
const DEFAULT_MAX_SESSIONS_PER_KEY = 8;
const MAX_BODY_BYTES = 1024 * 1024;
/** 2026-era server instances kept for reuse per key (one per request in flight at most). */
const MAX_IDLE_INSTANCES = 8;

/**
 * MCP over Streamable HTTP at `/mcp`, in both protocol eras, Host and Origin checked and every
 * request authenticated and rate-limited alike:
 * - 2026-07-28 (a request carrying the protocol-version claim in its `_meta` envelope): stateless,
 *   one server instance per request from the SDK's `createMcpHandler`, one handler per key so that
 *   `subscriptions/listen` streams carry only what that key may read;
 * - 2025 (`initialize` and everything without the claim): stateful sessions (Mcp-Session-Id,
 *   DELETE ends one), each bound to the Bearer key that opened it, resumable streams.
 * Neither holds action state: a restart loses sessions and streams, never actions.
 */
export function mountMcpHttp(app: Hono, engine: Engine, options: McpHttpOptions): McpHttpEndpoint {
  const { logger } = options;
  const sessions = new Map<string, Session>();
  /** The 2026 era's handler of each key (its rate-limit caller), and the principal it acts for. */
  const modern = new Map<string, { handler: McpHttpHandler; principal: Principal }>();
  const stopUpdates = engine.onChange((action) => {
    for (const { handler, principal } of modern.values()) if (engine.mayRead(principal, action)) handler.notify.resourceUpdated(actionUri(action.id));
  });
  const idleMs = options.sessionIdleMs ?? DEFAULT_IDLE_MS;
  const maxPerKey = options.maxSessionsPerKey ?? DEFAULT_MAX_SESSIONS_PER_KEY;

  const sweep = setInterval(() => {
    const cutoff = Date.now() - idleMs;
    for (const [id, session] of sessions) {
      if (session.lastUsed < cutoff) {
        sessions.delete(id);
        void session.close();
      }
    }
  }, Math.min(idleMs, 60_000));
  sweep.unref();

  /** Keeps a key under its cap: its least recently used sessions end first. */
  function makeRoomFor(caller: string): void {
    const own = [...sessions.entries()].filter(([, session]) => session.caller === caller).sort(([, a], [, b]) => a.lastUsed - b.lastUsed);
    for (const [id, session] of own.slice(0, Math.max(0, own.length - maxPerKey + 1))) {
      sessions.delete(id);
      void session.close();
    }
  }

  /** The key's 2026-era handler, made on its first request. */
  async function modernHandler(principal: Principal): Promise<McpHttpHandler> {
    const caller = callerOf(principal);
    const known = modern.get(caller);
    if (known) {
      known.principal = principal;
      return known.handler;
    }
    const [{ createMcpServer }, { createMcpHandler }] = await Promise.all([import("./server.js"), import("@modelcontextprotocol/server")]);
    // Instances a request has finished with, ready for the next: one request's instance holds nothing
    // of it once closed, and making one costs more than the rest of a small call.
    const idle: McpServer[] = [];
    const instance = (): McpServer => {
      const reused = idle.pop();
      if (reused) return reused;
      const mcp = createMcpServer({ engine, principal: entry.principal, logger, era: "modern", longLived: false });
      const onclose = mcp.server.onclose;
      mcp.server.onclose = () => {
        onclose?.();
        if (idle.length < MAX_IDLE_INSTANCES) idle.push(mcp);
      };
      return mcp;
    };
    const entry: { handler: McpHttpHandler; principal: Principal } = {
      principal,
      handler: createMcpHandler(instance, {
        legacy: "reject",
        maxRequestBodySize: MAX_BODY_BYTES,
        // Another coordinator's changes of the key's workspace are read here while a stream listens.
        bus: followingBus(() => engine.follow({ workspaceId: principal.workspaceId })),
        onerror: (error) => logger.debug({ err: error }, "MCP HTTP request refused"),
      }),
    };
    modern.set(caller, entry);
    return entry.handler;
  }

  async function openSession(principal: Principal, request: Request): Promise<Response> {
    makeRoomFor(callerOf(principal));
    // The MCP SDK is loaded by the first session, not by every start of the service.
    const [{ createMcpServer }, { WebStandardStreamableHTTPServerTransport }] = await Promise.all([import("./server.js"), import("@modelcontextprotocol/server")]);
    const mcp = createMcpServer({ engine, principal, logger, era: "legacy" });
    const session: Session = {
      transport: new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, session),
        onsessionclosed: (id) => void sessions.delete(id),
        maxRequestBodySize: MAX_BODY_BYTES,
        // Resumable streams: a cut stream is resumed with Last-Event-ID; clients retry after 1 s.
        eventStore: new SessionEventStore(),
        retryInterval: 1_000,
      }),
      close: () => mcp.close().catch((error: unknown) => logger.debug({ err: error }, "MCP session close failed")),
      caller: callerOf(principal),
      lastUsed: Date.now(),
    };
    session.transport.onerror = (error) => logger.debug({ err: error }, "MCP HTTP request refused");
    await mcp.connect(session.transport);
    const response = await session.transport.handleRequest(request);
    // Anything but an initialize request opens no session: nothing to keep.
    if (!session.transport.sessionId) await session.close();
    return response;
  }

  app.all(MCP_PATH, async (c) => {
    const refusal = checkHostAndOrigin(c.req.raw.headers, options, "MCP");
    if (refusal) return c.json(new AppError("forbidden", refusal).toJSON(), 403);
    const principal = await authenticate(c, engine);
    if (principal instanceof AppError) {
      c.header("WWW-Authenticate", 'Bearer realm="action-service"');
      return c.json(principal.toJSON(), 401);
    }
    const wait = await options.limiter.take(callerOf(principal));
    if (wait > 0) {
      c.header("Retry-After", String(wait));
      const error = tooManyRequests(wait);
      return c.json({ jsonrpc: "2.0", error: { code: -32000, message: `${error.code}: ${error.message}`, data: error.details }, id: null }, 429);
    }
    if (await isModern(c.req.raw)) {
      return closeIfUnread(await (await modernHandler(principal)).fetch(c.req.raw));
    }
    const sessionId = c.req.header("mcp-session-id");
    if (sessionId === undefined) {
      if (c.req.method !== "POST") return jsonRpcError(400, -32000, "Bad Request: Mcp-Session-Id header is required");
      return closeIfUnread(await openSession(principal, c.req.raw));
    }
    const session = sessions.get(sessionId);
    // Another key's session answers as if it did not exist (no existence leak).
    if (!session || session.caller !== callerOf(principal)) return jsonRpcError(404, -32001, "Session not found");
    session.lastUsed = Date.now();
    return closeIfUnread(await session.transport.handleRequest(c.req.raw));
  });

  return {
    get sessionCount() {
      return sessions.size;
    },
    async close() {
      clearInterval(sweep);
      stopUpdates();
      const handlers = [...modern.values()];
      modern.clear();
      await Promise.all(handlers.map(({ handler }) => handler.close()));
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.all(open.map((session) => session.close()));
    },
  };
}

/** Revisions served statelessly (`createMcpHandler`); every request of theirs names one in `MCP-Protocol-Version`. */
const MODERN_VERSIONS = new Set(["2026-07-28"]);
/** Revisions of sessions, which name theirs in that header on every request after `initialize`. */
const LEGACY_VERSIONS = new Set(["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]);

/**
 * Whether a request is of the 2026-07-28 era. Its `MCP-Protocol-Version` header says so without
 * reading the body (each era's transport then checks the body and refuses a mismatch); a request
 * without one (`initialize`, a malformed one) is classified by the SDK from its body, as the
 * revision defines.
 */
async function isModern(request: Request): Promise<boolean> {
  const version = request.headers.get("mcp-protocol-version");
  if (version !== null && MODERN_VERSIONS.has(version)) return true;
  if (version !== null && LEGACY_VERSIONS.has(version)) return false;
  const { isLegacyRequest } = await import("@modelcontextprotocol/server");
  return !(await isLegacyRequest(request, undefined, { maxRequestBodySize: MAX_BODY_BYTES }));
}

async function authenticate(c: Context, engine: Engine): Promise<Principal | AppError> {
  const key = bearerKey(c.req.header("authorization"));
  if (!key) return new AppError("unauthorized", "Send an API key as `Authorization: Bearer <key>`.");
  return (await engine.keys.authenticate(key)) ?? new AppError("unauthorized", "The API key is not valid.");
}

/** A 413 or 415 leaves the body unread on the wire: the connection cannot carry another request. */
function closeIfUnread(response: Response): Response {
  if (response.status !== 413 && response.status !== 415) return response;
  const headers = new Headers(response.headers);
  headers.set("connection", "close");
  return new Response(response.body, { status: response.status, headers });
}

function jsonRpcError(status: number, code: number, message: string): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status });
}

