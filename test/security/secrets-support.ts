import { randomBytes } from "node:crypto";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { readRawFile } from "../helpers/raw-file.js";

// Support for the secrets scan (secrets-scan.test.ts): what a secret looks like in a few
// cheap encodings, a byte scanner, a recorder of everything the service answered, and the
// few places where a live-link token may legitimately be handed out.

export type SecretKind =
  | "password"
  | "totp_secret"
  | "challenge_answer"
  | "session_cookie"
  | "api_key"
  | "link_token"
  | "master_key"
  | "webhook_secret"
  /** A message an inbox received (its text, subject, a code in it): sealed at rest, never shown (DESIGN §15). */
  | "inbox_message"
  /** An inbox's e-mail token (the address's local part), SMS token or SMS URL: shown only in an account's `inbox`. */
  | "inbox_token";

export interface Secret {
  kind: SecretKind;
  /** Whose secret it is, in words (never the value). */
  label: string;
  value: string;
  /** The random bytes the value encodes (tokens, keys), searched raw as well. */
  raw?: Buffer;
  /** A short all-digit value (a one-time code): a match must not be part of a longer number (a timestamp). */
  digits?: boolean;
}

export interface Finding {
  secret: Secret;
  where: string;
  encoding: string;
  offset: number;
  /** A little context, with the secret itself masked. */
  excerpt: string;
}

/** A Finding in one readable line (the secret's value is not in it). */
export function describeFinding(finding: Finding): string {
  return `${finding.secret.kind} (${finding.secret.label}) in ${finding.where} as ${finding.encoding} at ${finding.offset}: …${finding.excerpt}…`;
}

export const randomSecret = (prefix: string): string => `${prefix}-${randomBytes(12).toString("hex")}`;

/** A random RFC 4648 base32 TOTP secret (no padding). */
export function randomBase32(bytes = 20): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const byte of randomBytes(bytes)) bits += byte.toString(2).padStart(8, "0");
  let out = "";
  for (let i = 0; i + 5 <= bits.length; i += 5) out += alphabet[Number.parseInt(bits.slice(i, i + 5), 2)];
  return out;
}

/**
 * The base64 characters of `bytes` that do not depend on what surrounds them, for each of
 * the three alignments the bytes can have inside a larger encoded blob (standard and url alphabets).
 */
function base64Cores(bytes: Buffer): string[] {
  const cores = new Set<string>();
  for (const shift of [0, 1, 2]) {
    const encoded = Buffer.concat([Buffer.alloc(shift), bytes]).toString("base64");
    const core = encoded.slice(Math.ceil((8 * shift) / 6), Math.floor((8 * (shift + bytes.length)) / 6));
    if (core.length < 12) continue;
    cores.add(core);
    cores.add(core.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  return [...cores];
}

export interface Needle {
  encoding: string;
  bytes: Buffer;
}

/** The byte strings a secret would show up as: UTF-8, UTF-16LE, hex, base64 (and its raw bytes when it encodes some). */
export function needlesOf(secret: Secret): Needle[] {
  const utf8 = Buffer.from(secret.value, "utf8");
  const hex = utf8.toString("hex");
  const needles: Needle[] = [
    { encoding: "utf8", bytes: utf8 },
    { encoding: "utf16le", bytes: Buffer.from(secret.value, "utf16le") },
    { encoding: "hex", bytes: Buffer.from(hex) },
    { encoding: "HEX", bytes: Buffer.from(hex.toUpperCase()) },
    ...base64Cores(utf8).map((core) => ({ encoding: "base64", bytes: Buffer.from(core) })),
  ];
  if (secret.raw) {
    const rawHex = secret.raw.toString("hex");
    needles.push(
      { encoding: "raw bytes", bytes: secret.raw },
      { encoding: "raw hex", bytes: Buffer.from(rawHex) },
      { encoding: "raw HEX", bytes: Buffer.from(rawHex.toUpperCase()) },
      ...base64Cores(secret.raw).map((core) => ({ encoding: "raw base64", bytes: Buffer.from(core) })),
    );
  }
  const seen = new Set<string>();
  return needles.filter((needle, index) => {
    const id = needle.bytes.toString("hex");
    // A token's raw base64 is a piece of the token itself: one finding is enough.
    if (seen.has(id) || (index > 0 && utf8.includes(needle.bytes))) return false;
    seen.add(id);
    return true;
  });
}

const isDigit = (byte: number | undefined): boolean => byte !== undefined && byte >= 0x30 && byte <= 0x39;

const printable = (bytes: Buffer): string => bytes.toString("latin1").replace(/[^\x20-\x7e]/g, ".");

/** Every occurrence of every secret, in every encoding, in a byte string. */
export function scanBytes(where: string, haystack: Buffer, secrets: readonly Secret[]): Finding[] {
  const findings: Finding[] = [];
  for (const secret of secrets) {
    for (const needle of needlesOf(secret)) {
      for (let at = haystack.indexOf(needle.bytes); at !== -1; at = haystack.indexOf(needle.bytes, at + 1)) {
        if (secret.digits && needle.encoding === "utf8" && (isDigit(haystack[at - 1]) || isDigit(haystack[at + needle.bytes.length]))) continue;
        const before = printable(haystack.subarray(Math.max(0, at - 60), at));
        const after = printable(haystack.subarray(at + needle.bytes.length, at + needle.bytes.length + 60));
        findings.push({ secret, where, encoding: needle.encoding, offset: at, excerpt: `${before}<${secret.kind}>${after}` });
        if (findings.length > 200) return findings;
      }
    }
  }
  return findings;
}

export const scanText = (where: string, text: string, secrets: readonly Secret[]): Finding[] => scanBytes(where, Buffer.from(text, "utf8"), secrets);

/** `/live/<token>` anywhere (43 base64url characters: 32 random bytes). */
export const LIVE_TOKEN = /\/live\/([A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])/g;

export const tokensIn = (text: string): string[] => [...text.matchAll(LIVE_TOKEN)].map((match) => match[1]!);

export interface DataFile {
  path: string;
  relative: string;
  mode: number;
  isDirectory: boolean;
  bytes: Buffer | undefined;
}

/** Every file and folder under `dir` (the folder itself first), read raw. */
export function readTree(dir: string): DataFile[] {
  const out: DataFile[] = [];
  const visit = (path: string): void => {
    const stat = statSync(path);
    const entry: DataFile = { path, relative: relative(dir, path) || ".", mode: stat.mode & 0o777, isDirectory: stat.isDirectory(), bytes: undefined };
    out.push(entry);
    if (stat.isDirectory()) for (const name of readdirSync(path).sort()) visit(join(path, name));
    else entry.bytes = readRawFile(path);
  };
  visit(dir);
  return out;
}

// ---------------------------------------------------------------- recording

/**
 * One HTTP answer of the service (REST, the live pages, MCP's transport), one WebSocket message, or
 * one webhook delivery the service sent (`webhook`: its request headers and body, as the endpoint got them).
 */
export interface Exchange {
  surface: "rest" | "live" | "mcp-http" | "ws" | "webhook";
  method: string;
  /** The request's path (not scanned: the caller wrote it). */
  path: string;
  /** The request body as sent (not scanned); MCP's JSON-RPC requests are matched to their answers by it. */
  requestBody: string | undefined;
  status: number;
  headers: [string, string][];
  body: string;
}

/** One MCP tool call as the SDK client returned it. */
export interface ToolCall {
  name: string;
  args: Record<string, unknown>;
  result: CallToolResult;
}

export class Recorder {
  readonly exchanges: Exchange[] = [];
  readonly toolCalls: ToolCall[] = [];
  /** MCP `resources/read` results (an action resource is the action's JSON). */
  readonly resourceReads: { uri: string; result: unknown }[] = [];
  /** Server-to-client requests the MCP client received (URL elicitations). */
  readonly serverRequests: unknown[] = [];

  constructor(private readonly baseUrl: () => string) {}

  /** A REST call, recorded; `json` is the parsed body when it is JSON. */
  async api(
    method: string,
    path: string,
    body: unknown,
    options: { key: string; headers?: Record<string, string> },
  ): Promise<{ status: number; json: any; headers: Headers }> {
    const requestBody = body === undefined ? undefined : JSON.stringify(body);
    const response = await fetch(this.baseUrl() + path, {
      method,
      headers: { authorization: `Bearer ${options.key}`, "content-type": "application/json", ...options.headers },
      ...(requestBody === undefined ? {} : { body: requestBody }),
    });
    const text = await response.text();
    this.exchanges.push({ surface: "rest", method, path, requestBody, status: response.status, headers: [...response.headers], body: text });
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: response.status, json, headers: response.headers };
  }

  /**
   * A REST request whose answer is an event stream (`GET /v1/events`): what it sends within `ms` is
   * recorded, then the request is aborted (a stream never ends by itself).
   */
  async stream(path: string, options: { key: string; headers?: Record<string, string> }, ms: number): Promise<{ status: number; body: string }> {
    const abort = new AbortController();
    const response = await fetch(this.baseUrl() + path, { headers: { authorization: `Bearer ${options.key}`, ...options.headers }, signal: abort.signal });
    const exchange: Exchange = { surface: "rest", method: "GET", path, requestBody: undefined, status: response.status, headers: [...response.headers], body: "" };
    this.exchanges.push(exchange);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    const deadline = Date.now() + ms;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const chunk = await Promise.race([reader.read(), new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), left))]);
      if (!chunk || chunk.done) break;
      exchange.body += decoder.decode(chunk.value, { stream: true });
    }
    abort.abort();
    await reader.cancel().catch(() => undefined);
    return { status: exchange.status, body: exchange.body };
  }

  /** A webhook delivery as the endpoint received it. */
  webhook(path: string, headers: [string, string][], body: string): void {
    this.exchanges.push({ surface: "webhook", method: "POST", path, requestBody: undefined, status: 0, headers, body });
  }

  /** A live-link request (no key: the token is the credential), recorded. */
  async live(method: string, url: string, body?: unknown): Promise<{ status: number; text: string; headers: Headers }> {
    const requestBody = body === undefined ? undefined : JSON.stringify(body);
    const response = await fetch(url, {
      method,
      ...(requestBody === undefined ? {} : { body: requestBody, headers: { "content-type": "application/json" } }),
    });
    const text = await response.text();
    this.exchanges.push({ surface: "live", method, path: new URL(url).pathname, requestBody, status: response.status, headers: [...response.headers], body: text });
    return { status: response.status, text, headers: response.headers };
  }

  /** A fetch for the MCP client transport that records every HTTP answer (streamed bodies included, as they arrive). */
  readonly mcpFetch = async (url: string | URL, init?: RequestInit): Promise<Response> => {
    const response = await fetch(url, init);
    const exchange: Exchange = {
      surface: "mcp-http",
      method: init?.method ?? "GET",
      path: new URL(String(url)).pathname,
      requestBody: typeof init?.body === "string" ? init.body : undefined,
      status: response.status,
      headers: [...response.headers],
      body: "",
    };
    this.exchanges.push(exchange);
    if (response.body) {
      const copy = response.clone();
      void (async () => {
        const reader = copy.body!.getReader();
        const decoder = new TextDecoder();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          exchange.body += decoder.decode(value, { stream: true });
        }
      })().catch(() => undefined);
    }
    return response;
  };

  /** A WebSocket message of the live view. */
  wsMessage(path: string, data: string): void {
    this.exchanges.push({ surface: "ws", method: "WS", path, requestBody: undefined, status: 101, headers: [], body: data });
  }
}

// ---------------------------------------------------------------- where a token may be

/** What a live token opens, as the service itself resolves it. */
export type TokenOwner = { kind: "challenge"; actionId: string } | { kind: "sign_in"; accountId: string } | undefined;

const tokenOfUrl = (value: unknown): string | undefined => (typeof value === "string" ? tokensIn(value)[0] : undefined);

const clone = <T>(value: T): T => (value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T));

/**
 * Removes, in place, the one legitimate place of a challenge's link: `challenge.sign_in_url` of
 * that very action while it is at needs_input. Returns the tokens removed.
 */
function stripActionLinks(value: unknown, owner: (token: string) => TokenOwner, removed: Set<string>): void {
  if (Array.isArray(value)) {
    for (const item of value) stripActionLinks(item, owner, removed);
    return;
  }
  if (value === null || typeof value !== "object") return;
  const object = value as Record<string, any>;
  if (object.object === "action" && object.status === "needs_input" && object.challenge && typeof object.challenge === "object") {
    const token = tokenOfUrl(object.challenge.sign_in_url);
    const who = token ? owner(token) : undefined;
    if (token && who?.kind === "challenge" && who.actionId === object.id && object.challenge.sign_in_url === `${baseOf(object.challenge.sign_in_url)}/live/${token}`) {
      delete object.challenge.sign_in_url;
      removed.add(token);
    }
  }
  for (const inner of Object.values(object)) stripActionLinks(inner, owner, removed);
}

const baseOf = (url: string): string => url.slice(0, url.indexOf("/live/"));

/** `error.details.sign_in_url` of a 409 refusing an API/MCP answer to that action's device approval or captcha (DESIGN §4). */
function stripRefusalLink(error: any, actionId: string | undefined, owner: (token: string) => TokenOwner, removed: Set<string>): void {
  const token = tokenOfUrl(error?.details?.sign_in_url);
  const who = token ? owner(token) : undefined;
  if (error?.code === "conflict" && token && who?.kind === "challenge" && who.actionId === actionId) {
    delete error.details.sign_in_url;
    removed.add(token);
  }
}

/** Removes the allowed tokens' links from a readable text (the MCP text block repeats the structured result). */
function stripText(text: string, allowed: Set<string>): string {
  return text.replace(LIVE_TOKEN, (match, token: string) => (allowed.has(token) ? "/live/<handed-out>" : match));
}

/**
 * What of a tool result is left once the legitimate hand-outs are taken out: the action's
 * needs_input link (structured and in the text), the link in a 409 refusal's Details (never in its message).
 */
export function toolResultRemainder(name: string, args: Record<string, unknown>, result: CallToolResult, owner: (token: string) => TokenOwner): string {
  const removed = new Set<string>();
  const structured = clone(result.structuredContent);
  stripActionLinks(structured, owner, removed);
  const content = (result.content ?? []).map((block) => {
    if (block.type !== "text") return block;
    let text = block.text;
    if (result.isError && name === "answer_challenge") {
      const at = text.indexOf("\nDetails: ");
      if (at !== -1) {
        const message = text.slice(0, at);
        const refusal = { code: message.split(":")[0], details: JSON.parse(text.slice(at + "\nDetails: ".length)) as Record<string, unknown> };
        stripRefusalLink(refusal, typeof args.action_id === "string" ? args.action_id : undefined, owner, removed);
        text = `${message}\nDetails: ${JSON.stringify(refusal.details)}`;
      }
      return { ...block, text };
    }
    return { ...block, text: stripText(text, removed) };
  });
  return JSON.stringify({ ...result, structuredContent: structured, content });
}

/** What of a `resources/read` result is left once an action resource's needs_input link is taken out (it is the action's JSON). */
export function resourceRemainder(result: any, owner: (token: string) => TokenOwner): string {
  const copy = clone(result);
  for (const content of copy?.contents ?? []) {
    if (typeof content?.text !== "string" || content.mimeType !== "application/json") continue;
    const json: unknown = JSON.parse(content.text);
    stripActionLinks(json, owner, new Set());
    content.text = JSON.stringify(json);
  }
  return JSON.stringify(copy);
}

/** JSON-RPC messages in an MCP HTTP body (JSON or Server-Sent Events); what does not parse is kept as text. */
function jsonRpcMessages(body: string): { messages: any[]; unparsed: string } {
  const parse = (text: string): any[] | undefined => {
    try {
      const value: unknown = JSON.parse(text);
      return Array.isArray(value) ? value : [value];
    } catch {
      return undefined;
    }
  };
  const whole = body.trim() ? parse(body) : [];
  if (whole) return { messages: whole, unparsed: "" };
  const messages: any[] = [];
  let unparsed = "";
  for (const event of body.split(/\r?\n\r?\n/)) {
    const data = event
      .split(/\r?\n/)
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trimStart())
      .join("\n");
    const rest = event
      .split(/\r?\n/)
      .filter((line) => !line.startsWith("data:"))
      .join("\n");
    unparsed += `${rest}\n`;
    if (!data) continue;
    const parsed = parse(data);
    if (parsed) messages.push(...parsed);
    else unparsed += `${data}\n`;
  }
  return { messages, unparsed };
}

/**
 * What of an answer of the service is left once the legitimate hand-outs of live links are
 * taken out (DESIGN §4/§5): an action's `challenge.sign_in_url` while that action is at
 * needs_input; the 201 that creates an owner sign-in link (its `url`, shown once); the
 * `details.sign_in_url` of the 409 refusing an answer to that action; an MCP URL elicitation
 * offering a challenge's link. Everything else must hold no token at all.
 */
export function exchangeRemainder(exchange: Exchange, owner: (token: string) => TokenOwner): string {
  const headers = exchange.headers.map(([name, value]) => `${name}: ${value}`).join("\n");
  // An event stream's messages, and a webhook delivery, are events: `data` is the action (or account) as it was.
  if (exchange.surface === "webhook" || isEventStream(exchange)) {
    const { messages, unparsed } = exchange.surface === "webhook" ? { messages: [parseOrText(exchange.body)], unparsed: "" } : jsonRpcMessages(exchange.body);
    stripActionLinks(messages, owner, new Set());
    return `${headers}\n${JSON.stringify(messages)}\n${unparsed}`;
  }
  if (exchange.surface === "rest") {
    let json: any;
    try {
      json = exchange.body ? JSON.parse(exchange.body) : undefined;
    } catch {
      return `${headers}\n${exchange.body}`;
    }
    const removed = new Set<string>();
    stripActionLinks(json, owner, removed);
    const link = /^\/v1\/accounts\/([^/?]+)\/sign-in-links/.exec(exchange.path);
    if (link && exchange.method === "POST" && exchange.status === 201 && json && typeof json === "object") {
      const token = tokenOfUrl(json.url);
      const who = token ? owner(token) : undefined;
      if (who?.kind === "sign_in" && who.accountId === link[1]) delete json.url;
    }
    const answer = /^\/v1\/actions\/([^/?]+)\/answer/.exec(exchange.path);
    if (answer && exchange.status === 409) stripRefusalLink(json?.error, answer[1], owner, removed);
    return `${headers}\n${JSON.stringify(json)}`;
  }
  if (exchange.surface === "mcp-http") {
    const requests = new Map<unknown, any>();
    if (exchange.requestBody) for (const message of jsonRpcMessages(exchange.requestBody).messages) if (message?.id !== undefined) requests.set(message.id, message);
    const { messages, unparsed } = jsonRpcMessages(exchange.body);
    const remainder = messages.map((message) => {
      const request = requests.get(message?.id);
      if (message?.result && request?.method === "tools/call") {
        return toolResultRemainder(request.params?.name, request.params?.arguments ?? {}, message.result as CallToolResult, owner);
      }
      if (message?.result && request?.method === "resources/read") return resourceRemainder(message.result, owner);
      if (message?.method === "elicitation/create") return JSON.stringify(elicitationRemainder(message.params, owner));
      return JSON.stringify(message);
    });
    return `${headers}\n${remainder.join("\n")}\n${unparsed}`;
  }
  return `${headers}\n${exchange.body}`;
}

/** A URL elicitation's `url` may be a challenge's link (DESIGN §6); nothing else in it may hold a token. */
export function elicitationRemainder(params: any, owner: (token: string) => TokenOwner): unknown {
  const copy = clone(params);
  const token = tokenOfUrl(copy?.url);
  if (copy?.mode === "url" && token && owner(token)?.kind === "challenge") delete copy.url;
  return copy;
}

const isEventStream = (exchange: Exchange): boolean =>
  exchange.surface === "rest" && exchange.headers.some(([name, value]) => name.toLowerCase() === "content-type" && value.startsWith("text/event-stream"));

function parseOrText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * What of an answer is left once every account's `inbox` (`{"email", "sms_url"}`, the one place its
 * tokens are handed out: DESIGN §15) is taken out, at any depth of JSON-in-a-string escaping.
 */
export const withoutInboxes = (text: string): string => text.replace(/(\\*)"inbox\1"\s*:\s*\{[^{}]*\}/g, '"inbox":"<removed>"');

/**
 * What of an exchange is left once the one place a webhook endpoint's signing secret is handed out
 * is taken out: the `secret` of the 201 that creates it (DESIGN §13: shown once). Every other
 * secret is searched in it as it is.
 */
export function secretRemainder(exchange: Exchange): string {
  const headers = exchange.headers.map(([name, value]) => `${name}: ${value}`).join("\n");
  if (exchange.surface === "rest" && exchange.method === "POST" && /^\/v1\/webhooks\/?(\?|$)/.test(exchange.path) && exchange.status === 201) {
    const json = parseOrText(exchange.body);
    if (json && typeof json === "object" && typeof (json as { secret?: unknown }).secret === "string") {
      delete (json as { secret?: unknown }).secret;
      return `${headers}\n${JSON.stringify(json)}`;
    }
  }
  return `${headers}\n${exchange.body}`;
}
