import { ProtocolError, ProtocolErrorCode, type CallToolResult } from "@modelcontextprotocol/server";
import type { AppError } from "../domain/errors.js";
import { asAppError } from "../engine/request-errors.js";

/** JSON-RPC code of "resource not found" in the 2025 spec; the SDK sends it as -32602 in both eras, as the 2026-07-28 revision says. */
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

/** A request-level error outside a tool call (resources) as a JSON-RPC error. */
export function toMcpError(error: unknown): ProtocolError {
  if (error instanceof ProtocolError) return error;
  const known = asAppError(error);
  if (known) {
    const code = known.code === "not_found" ? RESOURCE_NOT_FOUND : known.code === "service_unavailable" ? ProtocolErrorCode.InternalError : ProtocolErrorCode.InvalidParams;
    return new ProtocolError(code, describeAppError(known), known.details);
  }
  return new ProtocolError(ProtocolErrorCode.InternalError, INTERNAL);
}
