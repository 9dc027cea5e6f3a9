import type { Readable, Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/server";
import { serveStdio, StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { createMcpServer, type McpSessionOptions } from "./server.js";

export interface StdioServerOptions extends Omit<McpSessionOptions, "era" | "longLived"> {
  /** Defaults to process.stdin / process.stdout; stdout then carries only JSON-RPC (logs go to stderr). */
  stdin?: Readable;
  stdout?: Writable;
  /** The client's side of the pipe, for tests in one process (an in-memory transport). */
  transport?: Transport;
}

/** A running stdio MCP server. */
export interface StdioMcpServer {
  /** Resolves when the connection ends: the client closed stdin, or `close()` was called. */
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves MCP over stdio for one principal (the CLI's `action-service mcp` passes the local owner,
 * `engine.keys.ownerPrincipal()`), in whichever era the client opens with: `server/discover` or an
 * enveloped request (2026-07-28), or `initialize` (2025). The SDK's `serveStdio` makes that choice
 * and keeps one instance for the connection. The caller owns the engine and stops it once `closed`
 * resolves.
 */
export async function runStdioServer(options: StdioServerOptions): Promise<StdioMcpServer> {
  let markClosed!: () => void;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  const wire = watchClose(options.transport ?? new StdioServerTransport(options.stdin ?? process.stdin, options.stdout ?? process.stdout), markClosed);
  const handle = serveStdio(({ era }) => createMcpServer({ ...options, era, longLived: true }), {
    transport: wire,
    onerror: (error) => options.logger.warn({ err: error }, "MCP stdio transport error"),
  });
  options.logger.info("MCP server ready on stdio");
  return {
    closed,
    close: async () => {
      await handle.close();
      markClosed();
    },
  };
}

/** The transport, passed on as it is, that also says when it has closed (`serveStdio` owns its callbacks). */
function watchClose(inner: Transport, onClosed: () => void): Transport {
  const wire: Transport = {
    start: () => inner.start(),
    send: (message, options) => inner.send(message, options),
    close: () => inner.close(),
    ...(inner.setProtocolVersion ? { setProtocolVersion: (version: string) => inner.setProtocolVersion!(version) } : {}),
  };
  inner.onmessage = (message, extra) => wire.onmessage?.(message, extra);
  inner.onerror = (error) => wire.onerror?.(error);
  inner.onclose = () => {
    wire.onclose?.();
    onClosed();
  };
  return wire;
}
