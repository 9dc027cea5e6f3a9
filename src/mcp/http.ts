import { randomUUID } from "node:crypto";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Context, Hono } from "hono";
import { bearerKey } from "../api/app.js";
import { AppError } from "../domain/errors.js";
import type { Principal } from "../domain/keys.js";
import type { Engine } from "../engine/engine.js";
import type { Logger } from "../engine/logger.js";
import { createMcpServer } from "./server.js";

export interface McpHttpOptions {
  /**
   * Host header values accepted (DNS-rebinding protection), e.g. `127.0.0.1:8787`;
   * an entry without a port accepts that host on any port.
   */
  allowedHosts: string[];
  /** Origin header values accepted from browsers; by default an origin whose host is an allowed host. */
  allowedOrigins?: string[];
  logger: Logger;
  /** A session unused this long is closed (default 30 minutes); the client then starts a new one. */
  sessionIdleMs?: number;
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
  keyId: string | undefined;
  lastUsed: number;
}

export const MCP_PATH = "/mcp";
const MAX_BODY_BYTES = 1024 * 1024;

/**
 * The Host values a server on `host:port` answers to (loopback names included), plus
 * the public URL's host. Port 0 (chosen when listening) accepts those hosts on any port.
 */
export function defaultAllowedHosts(host: string, port: number, publicUrl?: string): string[] {
  const names = [host.includes(":") && !host.startsWith("[") ? `[${host}]` : host, "127.0.0.1", "localhost", "[::1]"];
  const hosts = new Set(names.map((name) => (port === 0 ? name : `${name}:${port}`)));
  if (publicUrl) hosts.add(new URL(publicUrl).host);
  return [...hosts];
}

/**
 * MCP over Streamable HTTP at `/mcp`: stateful sessions (Mcp-Session-Id, DELETE ends
 * one), each bound to the Bearer key that opened it, with the key's role and
 * allow-list; Host and Origin checked. Sessions hold no action state: a restart
 * loses sessions, never actions.
 */
export function mountMcpHttp(app: Hono, engine: Engine, options: McpHttpOptions): McpHttpEndpoint {
  const { logger } = options;
  const sessions = new Map<string, Session>();
  const idleMs = options.sessionIdleMs ?? 30 * 60 * 1000;

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

  async function openSession(principal: Principal, request: Request): Promise<Response> {
    const mcp = createMcpServer({ engine, principal, logger });
    const session: Session = {
      transport: new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, session),
        onsessionclosed: (id) => void sessions.delete(id),
        maxRequestBodySize: MAX_BODY_BYTES,
      }),
      close: () => mcp.close().catch((error: unknown) => logger.debug({ err: error }, "MCP session close failed")),
      keyId: principal.keyId,
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
    const refusal = checkHostAndOrigin(c.req.raw.headers, options);
    if (refusal) return c.json(new AppError("forbidden", refusal).toJSON(), 403);
    const principal = authenticate(c, engine);
    if (principal instanceof AppError) {
      c.header("WWW-Authenticate", 'Bearer realm="action-service"');
      return c.json(principal.toJSON(), 401);
    }
    const sessionId = c.req.header("mcp-session-id");
    if (sessionId === undefined) {
      if (c.req.method !== "POST") return jsonRpcError(400, -32000, "Bad Request: Mcp-Session-Id header is required");
      return openSession(principal, c.req.raw);
    }
    const session = sessions.get(sessionId);
    // Another key's session answers as if it did not exist (no existence leak).
    if (!session || session.keyId !== principal.keyId) return jsonRpcError(404, -32001, "Session not found");
    session.lastUsed = Date.now();
    return session.transport.handleRequest(c.req.raw);
  });

  return {
    get sessionCount() {
      return sessions.size;
    },
    async close() {
      clearInterval(sweep);
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.all(open.map((session) => session.close()));
    },
  };
}

function authenticate(c: Context, engine: Engine): Principal | AppError {
  const key = bearerKey(c.req.header("authorization"));
  if (!key) return new AppError("unauthorized", "Send an API key as `Authorization: Bearer <key>`.");
  return engine.authenticate(key) ?? new AppError("unauthorized", "The API key is not valid.");
}

function jsonRpcError(status: number, code: number, message: string): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status });
}

/** DNS-rebinding protection: a refusal message, or undefined when Host and Origin are acceptable. */
export function checkHostAndOrigin(headers: Headers, options: Pick<McpHttpOptions, "allowedHosts" | "allowedOrigins">): string | undefined {
  const host = headers.get("host");
  if (!host || !hostAllowed(host, options.allowedHosts)) return `Host ${host ?? "(none)"} is not allowed for MCP.`;
  const origin = headers.get("origin");
  if (origin === null) return undefined; // not a browser
  const allowed = options.allowedOrigins
    ? options.allowedOrigins.some((entry) => normalizeOrigin(entry) === normalizeOrigin(origin))
    : originHost(origin) !== undefined && hostAllowed(originHost(origin)!, options.allowedHosts);
  return allowed ? undefined : `Origin ${origin} is not allowed for MCP.`;
}

function hostAllowed(host: string, allowedHosts: readonly string[]): boolean {
  const value = host.trim().toLowerCase();
  const withoutPort = value.replace(/:\d+$/, "");
  return allowedHosts.some((entry) => {
    const allowed = entry.trim().toLowerCase();
    return allowed === value || (!/:\d+$/.test(allowed) && allowed === withoutPort);
  });
}

function normalizeOrigin(origin: string): string {
  return origin.trim().toLowerCase().replace(/\/+$/, "");
}

function originHost(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}
