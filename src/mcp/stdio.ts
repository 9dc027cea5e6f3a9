import type { Readable, Writable } from "node:stream";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createMcpServer, type McpSessionOptions } from "./server.js";

export interface StdioServerOptions extends McpSessionOptions {
  /** Defaults to process.stdin / process.stdout; stdout then carries only JSON-RPC (logs go to stderr). */
  stdin?: Readable;
  stdout?: Writable;
}

/** A running stdio MCP server. */
export interface StdioMcpServer {
  /** Resolves when the session ends: the client closed stdin, or `close()` was called. */
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves MCP over stdio for one principal (the CLI's `action-service mcp` passes the
 * local owner, `engine.ownerPrincipal()`). The caller owns the engine and stops it
 * once `closed` resolves.
 */
export async function runStdioServer(options: StdioServerOptions): Promise<StdioMcpServer> {
  const stdin = options.stdin ?? process.stdin;
  const mcp = createMcpServer(options);
  const transport = new StdioServerTransport(stdin, options.stdout ?? process.stdout);
  let markClosed!: () => void;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  transport.onerror = (error) => options.logger.warn({ err: error }, "MCP stdio transport error");
  await mcp.connect(transport);
  // connect() installs its own onclose; chain ours after it.
  const onTransportClose = transport.onclose;
  transport.onclose = () => {
    onTransportClose?.();
    markClosed();
  };
  const close = async (): Promise<void> => {
    stdin.off("end", onEnd);
    await mcp.close();
    markClosed();
  };
  const onEnd = (): void => void close();
  // The SDK transport does not notice the client going away; an ended stdin is that signal.
  stdin.once("end", onEnd);
  options.logger.info("MCP server ready on stdio");
  return { closed, close };
}
