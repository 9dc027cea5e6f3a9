import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { RestCase } from "./fuzz-cases.js";
import type { RawResponse } from "./http-client.js";
import { errorEnvelopeProblem, isSeedErrorCode } from "./seed-errors.js";

/** What one sent case came to. */
export interface Verdict {
  /** An HTTP status, or for the SDK client `ok` / `isError` / `jsonrpc-error`. */
  status: string;
  /** Refused (4xx, an MCP error or isError result, a top-up's documented 503): it must have changed nothing. */
  rejected: boolean;
  /** The request error code, when there is one. */
  code?: string;
  /** An undocumented 5xx (or an internal error over MCP): the service broke, not the request. */
  serverError?: boolean;
  /** Broken promises: a 5xx, a body off the documented shape. */
  problems: string[];
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export function judgeRest(spec: RestCase, response: RawResponse): Verdict {
  const status = String(response.status);
  const json = parseJson(response.body) as { error?: { code?: string } } | undefined;
  const code = json?.error?.code;
  if (response.status >= 500) {
    // DESIGN §7: a top-up whose facilitator does not answer is a 503 naming it, and credits nothing.
    const documented = response.status === 503 && spec.path.startsWith("/v1/credits/top-ups") && code === "service_unavailable";
    return { status, rejected: true, ...(code ? { code } : {}), serverError: !documented, problems: documented ? [] : [`${response.status}: ${response.body.slice(0, 300)}`] };
  }
  if (response.status >= 400) {
    const problem = errorEnvelopeProblem(response.status, json);
    return { status, rejected: true, ...(code ? { code } : {}), problems: problem ? [`${response.status} body: ${problem}: ${response.body.slice(0, 200)}`] : [] };
  }
  return { status, rejected: false, problems: [] };
}

/** Why an isError tool result does not start with a request-error code (undefined when it does). */
export function toolErrorProblem(text: string): string | undefined {
  const code = /^([a-z_]+): /.exec(text)?.[1];
  if (isSeedErrorCode(code)) return undefined;
  // The SDK validates arguments against the input schema before the tool runs; its refusal says so.
  if (/^(MCP error -32602: |Input validation error: )/.test(text)) return undefined;
  return `tool error without a request-error code: ${text.slice(0, 200)}`;
}

function toolErrorCode(text: string): string {
  const code = /^([a-z_]+): /.exec(text)?.[1];
  return isSeedErrorCode(code) ? code : "sdk_invalid_params";
}

/** Why a 4xx body from /mcp is neither the REST error body nor a JSON-RPC error (undefined when it is one). */
export function mcpRefusalProblem(status: number, body: string): string | undefined {
  const json = parseJson(body) as { jsonrpc?: unknown; error?: { code?: unknown; message?: unknown } } | undefined;
  if (json?.jsonrpc === "2.0" && typeof json.error?.code === "number" && typeof json.error.message === "string") return undefined;
  const problem = errorEnvelopeProblem(status, json);
  return problem ? `${status} from /mcp: ${problem}: ${body.slice(0, 200)}` : undefined;
}

/**
 * The MCP SDK answers params that do not fit a spec method's schema (e.g. `arguments` that
 * is not an object) with -32603 and the zod issues, where JSON-RPC says -32602: a known SDK
 * bug (modelcontextprotocol/typescript-sdk#2284), no fault of the service, counted apart.
 */
function isSdkParamsSchemaError(message: string): boolean {
  try {
    const issues = JSON.parse(message.replace(/^MCP error -32603: /, "")) as { path?: unknown[] }[];
    return Array.isArray(issues) && issues.length > 0 && issues.every((issue) => Array.isArray(issue.path) && issue.path[0] === "params");
  } catch {
    return false;
  }
}

/** Judges the JSON-RPC answers: an internal error is a broken promise, a refusal is a rejection. */
export function judgeMessages(messages: unknown[], status: string): Verdict {
  const verdict: Verdict = { status, rejected: false, problems: [] };
  // A batch may mix answers: it counts as rejected only when every message in it was refused.
  let refusals = 0;
  for (const message of messages as { error?: { code?: number; message?: string }; result?: CallToolResult }[]) {
    if (message.error) {
      refusals += 1;
      const sdkMislabel = message.error.code === -32603 && isSdkParamsSchemaError(message.error.message ?? "");
      verdict.code = sdkMislabel ? "jsonrpc -32603 (SDK: params off the method's schema)" : `jsonrpc ${message.error.code}`;
      if (!sdkMislabel && (message.error.code === -32603 || /internal_error/.test(message.error.message ?? ""))) verdict.problems.push(`JSON-RPC internal error: ${message.error.message}`);
    } else if (message.result?.isError) {
      const text = message.result.content?.map((block) => (block.type === "text" ? block.text : "")).join("\n") ?? "";
      refusals += 1;
      verdict.code = toolErrorCode(text);
      const problem = toolErrorProblem(text);
      if (problem) verdict.problems.push(problem);
    }
  }
  verdict.rejected = messages.length > 0 && refusals === messages.length;
  return verdict;
}
