import type { Context } from "hono";
import { z } from "zod";
import { AppError } from "../domain/errors.js";
import { MAX_JSON_DEPTH, jsonTextTooDeep } from "../domain/json.js";
import { MAX_MESSAGE_CHARS } from "../engine/inbox/index.js";

/** A text as an SMS gateway or a phone's forwarding rule sends it: JSON, or the form fields gateways use. */
const JsonText = z.object({ from: z.string().max(200).optional(), text: z.string().min(1).max(MAX_MESSAGE_CHARS) });
const FormText = z.object({ From: z.string().max(200).optional(), Body: z.string().min(1).max(MAX_MESSAGE_CHARS) });

export interface SmsText {
  from: string | undefined;
  text: string;
}

/**
 * The text a request to an SMS URL carries. Anyone may send anything here, so every way a body can
 * be broken — bytes that are not its charset, a charset nobody knows, JSON that does not parse, a
 * form or multipart body that does not, a bad `%` escape — is a 400 `malformed_request`, never a
 * failure of ours; a body that parses but lacks the text is a 422.
 */
export async function readSmsText(c: Context): Promise<SmsText> {
  const header = c.req.header("content-type") ?? "";
  const [essence = "", ...parameters] = header.split(";").map((part) => part.trim());
  const type = essence.toLowerCase();
  const charset = charsetOf(parameters);
  if (type === "application/json") {
    const text = decode(new Uint8Array(await c.req.arrayBuffer()), charset);
    if (jsonTextTooDeep(text)) throw new AppError("malformed_request", `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`, { max_depth: MAX_JSON_DEPTH });
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new AppError("malformed_request", "The request body is not valid JSON.");
    }
    const parsed = JsonText.safeParse(body);
    if (!parsed.success) throw new AppError("invalid_request", 'Send {"from"?: string, "text": string}.', { issues: parsed.error.issues.map((issue) => issue.message) });
    return { from: parsed.data.from, text: parsed.data.text };
  }
  if (type === "application/x-www-form-urlencoded") return formText(urlEncodedFields(new Uint8Array(await c.req.arrayBuffer()), charset));
  if (type === "multipart/form-data") return formText(await multipartFields(c));
  throw new AppError("malformed_request", 'Send JSON {"from"?, "text"} or the form fields From and Body.', { content_type: header.slice(0, 200) });
}

function formText(fields: Record<string, unknown>): SmsText {
  const parsed = FormText.safeParse(fields);
  if (!parsed.success) throw new AppError("invalid_request", "Send the form fields Body (the text) and From.", { issues: parsed.error.issues.map((issue) => issue.message) });
  return { from: parsed.data.From, text: parsed.data.Body };
}

function charsetOf(parameters: readonly string[]): string {
  const parameter = parameters.find((part) => part.toLowerCase().startsWith("charset="));
  return parameter ? parameter.slice("charset=".length).replace(/^"(.*)"$/, "$1") : "utf-8";
}

/** `bytes` read in `charset`; bytes that are not valid in it, or a charset that is not one, are the sender's mistake. */
function decode(bytes: Uint8Array, charset: string): string {
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset, { fatal: true });
  } catch {
    throw new AppError("malformed_request", "The request names a charset this URL does not read; send UTF-8.");
  }
  try {
    return decoder.decode(bytes);
  } catch {
    throw new AppError("malformed_request", `The request body is not valid ${decoder.encoding}.`);
  }
}

/**
 * A URL-encoded form's fields, strictly: a `%` not followed by two hex digits, or escaped bytes
 * that are not valid in the charset, is malformed (URLSearchParams would keep them as they are, and
 * a code could then be read out of garbage). Bytes are split first and decoded after, so an
 * escaped `&` or `=` stays in its value. The last of a repeated field wins.
 */
function urlEncodedFields(bytes: Uint8Array, charset: string): Record<string, string> {
  const fields = new Map<string, string>();
  // One character per byte: the escapes are undone on bytes, then the bytes read in the charset.
  for (const pair of Buffer.from(bytes).toString("latin1").split("&")) {
    if (pair === "") continue;
    const at = pair.indexOf("=");
    const [name, value] = at === -1 ? [pair, ""] : [pair.slice(0, at), pair.slice(at + 1)];
    fields.set(unescapeField(name, charset), unescapeField(value, charset));
  }
  return Object.fromEntries(fields);
}

function unescapeField(escaped: string, charset: string): string {
  if (/%(?![0-9a-f]{2})/i.test(escaped)) throw new AppError("malformed_request", "The request body is not a valid URL-encoded form (a % not followed by two hex digits).");
  const bytes = escaped.replace(/\+/g, " ").replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return decode(Buffer.from(bytes, "latin1"), charset);
}

async function multipartFields(c: Context): Promise<Record<string, unknown>> {
  try {
    return await c.req.parseBody();
  } catch {
    // No boundary, a boundary never found, a part cut short: Node's parser says no more than that.
    throw new AppError("malformed_request", "The request body is not a valid multipart form.");
  }
}
