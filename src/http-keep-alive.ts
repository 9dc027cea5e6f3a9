import type { Server } from "node:http";

/**
 * How long our HTTP servers keep an idle keep-alive connection: longer than any client keeps one
 * (Node's fetch 4 s, browsers up to 60 s), the usual rule behind load balancers. A server that
 * closes first races the client's next request on that connection, which then fails with
 * ECONNRESET; on a busy machine the client's own timer fires late and that race is lost often.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 75_000;

/** Makes a server keep idle connections for KEEP_ALIVE_TIMEOUT_MS (its close() still ends idle ones at once). */
export function outlastClientKeepAlive(server: Server): void {
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  // Above the keep-alive time: a connection idle until just before it closes may still start a request.
  server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1_000;
}
