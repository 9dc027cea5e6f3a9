import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { AppError } from "../domain/errors.js";
import { asAppError } from "../engine/request-errors.js";

/** JSON-RPC code of "resource not found" in the MCP spec. */
const RESOURCE_NOT_FOUND = -32002;

const INTERNAL = "internal_error: Something went wrong on our side; the call may be retried.";

/** `code: message`, with the details (e.g. a challenge's sign_in_url) when the error has them. */
function describeAppError(error: AppError): string {
  return error.details ? `${error.code}: ${error.message}\nDetails: ${JSON.stringify(error.details)}` : `${error.code}: ${error.message}`;
}

/**
 * A request-level error as a tool result (`isError`), with the same codes as REST.
 * Anything else is not the caller's fault and says so without internals.
 */
export function toolError(error: unknown): CallToolResult {
  const known = asAppError(error);
  const text = known ? describeAppError(known) : INTERNAL;
  return { isError: true, content: [{ type: "text", text }] };
}

/**
 * A JSON-RPC error whose message is sent as it is: `McpError` puts "MCP error <code>: " into its
 * message, and the client's `McpError` adds it again ("MCP error -32602: MCP error -32602: …").
 */
export class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = "ProtocolError";
  }
}

/** A request-level error outside a tool call (resources) as a JSON-RPC error. */
export function toMcpError(error: unknown): McpError | ProtocolError {
  if (error instanceof McpError || error instanceof ProtocolError) return error;
  const known = asAppError(error);
  if (known) {
    const code = known.code === "not_found" ? RESOURCE_NOT_FOUND : known.code === "service_unavailable" ? ErrorCode.InternalError : ErrorCode.InvalidParams;
    return new ProtocolError(code, describeAppError(known), known.details);
  }
  return new ProtocolError(ErrorCode.InternalError, INTERNAL);
}
