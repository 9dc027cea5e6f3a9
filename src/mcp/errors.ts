import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { AppError } from "../domain/errors.js";

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
  const text = error instanceof AppError ? describeAppError(error) : INTERNAL;
  return { isError: true, content: [{ type: "text", text }] };
}

/** A request-level error outside a tool call (resources) as a JSON-RPC error. */
export function toMcpError(error: unknown): McpError {
  if (error instanceof McpError) return error;
  if (error instanceof AppError) {
    const code = error.code === "not_found" ? RESOURCE_NOT_FOUND : ErrorCode.InvalidParams;
    return new McpError(code, describeAppError(error), error.details);
  }
  return new McpError(ErrorCode.InternalError, INTERNAL);
}
