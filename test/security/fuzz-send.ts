import { randomUUID } from "node:crypto";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import type { Auth, BodySpec, McpRawCase, RestCase } from "./fuzz-cases.js";
import { judgeMessages, judgeRest, mcpRefusalProblem, type Verdict } from "./fuzz-verdict.js";
import { nestedText } from "./hostile.js";
import { jsonRpcMessages, nextRequestProblem, sendRaw, type RawResponse } from "./http-client.js";
import type { World } from "./world.js";

/** Replaces `{{own_action}}`-style tokens with the ids and keys live now. */
export type Resolve = (text: string) => string;

const hugeBodies = new Map<string, Buffer>();

/** The body's bytes, tokens resolved; huge ones are built once and reused. */
function bodyBytes(spec: BodySpec, resolve: Resolve, surface: "rest" | "mcp"): Buffer | undefined {
  switch (spec.kind) {
    case "none":
      return undefined;
    case "json":
      return Buffer.from(resolve(JSON.stringify(spec.value) ?? "null"));
    case "text":
      return Buffer.from(resolve(spec.text));
    case "bytes":
      return Buffer.from(spec.bytes);
    case "deep": {
      const deep = nestedText(spec.depth, spec.nest);
      if (spec.where === "whole") return Buffer.from(deep);
      const create = `{"account_id":"${resolve("{{own_account}}")}","type":"post","params":{"text":"deep","deep":${deep}}}`;
      // Over MCP: the same create as run_action's arguments, with an idempotency_key (its closing brace replaced).
      return Buffer.from(surface === "rest" ? create : `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_action","arguments":${create.slice(0, -1)},"idempotency_key":"fuzz-deep"}}}`);
    }
    case "huge": {
      const cacheKey = `${spec.shape}:${spec.bytes}`;
      let bytes = hugeBodies.get(cacheKey);
      if (!bytes) {
        bytes = Buffer.from(spec.shape === "string" ? `{"account_id":"acc_x","type":"post","params":{"text":"${"x".repeat(spec.bytes)}"}}` : spec.shape === "whitespace" ? `${" ".repeat(spec.bytes)}{}` : `[${"1,".repeat(spec.bytes / 2)}1]`);
        hugeBodies.set(cacheKey, bytes);
      }
      return bytes;
    }
  }
}

function authorization(auth: Auth, world: World, resolve: Resolve): Record<string, string> {
  if (auth === "none") return {};
  if (typeof auth === "object") return { authorization: resolve(auth.header) };
  return { authorization: `Bearer ${world.keys[auth]}` };
}

export async function sendRest(world: World, spec: RestCase, resolve: Resolve): Promise<Verdict> {
  const body = bodyBytes(spec.body, resolve, "rest");
  const headers: Record<string, string> = { ...authorization(spec.auth, world, resolve) };
  if (spec.contentType !== undefined) headers["content-type"] = spec.contentType;
  if (spec.idempotencyKey !== undefined) headers["idempotency-key"] = spec.idempotencyKey;
  if (spec.lastEventId !== undefined) headers["last-event-id"] = resolve(spec.lastEventId);
  // No REST answer is a stream that ends (GET /v1/events never does): its first bytes are judged, then it is let go.
  const response = await sendRaw(world.port, { method: spec.method, path: resolve(spec.path), headers, ...(body ? { body } : {}), chunked: spec.body.kind === "huge" && spec.body.chunked, eventStreamFirstBytes: true });
  const verdict = judgeRest(spec, response);
  // A big body the server may have answered before reading: does the kept-alive connection still work?
  if (body && body.length >= BIG_BODY_BYTES) {
    const problem = await nextRequestProblem(world.port);
    if (problem) verdict.problems.push(problem);
  }
  return verdict;
}

/** Above what socket buffers absorb: a body the server has not read is still partly on the wire. */
const BIG_BODY_BYTES = 128 * 1024;

/** One initialized session per key, opened as a client would (initialize, then notifications/initialized). */
export class McpSessions {
  readonly #ids = new Map<string, string>();
  constructor(private readonly world: World) {}

  async idFor(key: keyof World["keys"]): Promise<string> {
    const known = this.#ids.get(key);
    if (known) return known;
    const headers = { authorization: `Bearer ${this.world.keys[key]}`, "content-type": "application/json", accept: "application/json, text/event-stream" };
    const initialize = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "fuzz", version: "1" } } };
    const opened = await sendRaw(this.world.port, { method: "POST", path: "/mcp", headers, body: Buffer.from(JSON.stringify(initialize)) });
    const id = opened.headers["mcp-session-id"];
    if (typeof id !== "string") throw new Error(`no MCP session for ${key}: ${opened.status} ${opened.body.slice(0, 200)}`);
    const ready = { jsonrpc: "2.0", method: "notifications/initialized" };
    await sendRaw(this.world.port, { method: "POST", path: "/mcp", headers: { ...headers, "mcp-session-id": id, "mcp-protocol-version": LATEST_PROTOCOL_VERSION }, body: Buffer.from(JSON.stringify(ready)) });
    this.#ids.set(key, id);
    return id;
  }

  /** A session the server no longer knows (evicted by newer ones of the same key) is opened again next time. */
  forget(id: string): void {
    for (const [key, value] of this.#ids) if (value === id) this.#ids.delete(key);
  }
}

export async function sendMcpRaw(world: World, spec: McpRawCase, resolve: Resolve, sessions: McpSessions): Promise<Verdict> {
  const headers: Record<string, string> = { ...authorization(spec.auth, world, resolve), "mcp-protocol-version": LATEST_PROTOCOL_VERSION };
  if (spec.accept !== undefined) headers.accept = spec.accept;
  if (spec.contentType !== undefined) headers["content-type"] = spec.contentType;
  const validKey = typeof spec.auth === "string" && spec.auth !== "none" && spec.auth !== "bad" ? spec.auth : undefined;
  let sessionId: string | undefined;
  if (spec.session === "own" && validKey) sessionId = await sessions.idFor(validKey);
  else if (spec.session === "admin's") sessionId = await sessions.idFor("admin");
  else if (spec.session === "made-up") sessionId = randomUUID();
  if (sessionId) headers["mcp-session-id"] = sessionId;
  const body = bodyBytes(spec.body, resolve, "mcp");
  const response = await sendRaw(world.port, { method: "POST", path: "/mcp", headers, ...(body ? { body } : {}), chunked: spec.body.kind === "huge" && spec.body.chunked });
  const verdict = judgeMcpRaw(spec, response, sessionId, sessions);
  if (body && body.length >= BIG_BODY_BYTES) {
    const problem = await nextRequestProblem(world.port);
    if (problem) verdict.problems.push(problem);
  }
  return verdict;
}

function judgeMcpRaw(spec: McpRawCase, response: RawResponse, sessionId: string | undefined, sessions: McpSessions): Verdict {
  const status = String(response.status);
  if (response.status === 404 && sessionId && spec.session === "own") sessions.forget(sessionId);
  if (response.status >= 500) return { status, rejected: true, serverError: true, problems: [`${response.status} from /mcp: ${response.body.slice(0, 300)}`] };
  if (response.status >= 400) {
    const problem = mcpRefusalProblem(response.status, response.body);
    return { status, rejected: true, problems: problem ? [problem] : [] };
  }
  let messages: unknown[];
  try {
    messages = jsonRpcMessages(response);
  } catch {
    return { status, rejected: false, problems: [`${status} from /mcp with a body that is not JSON-RPC: ${response.body.slice(0, 200)}`] };
  }
  return judgeMessages(messages, status);
}
