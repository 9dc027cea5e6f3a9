import { lookup } from "node:dns/promises";
import { Agent as HttpAgent, request as httpRequest, type RequestOptions } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";
import { AppError } from "../domain/errors.js";

/** Why a webhook target may not be sent to (SSRF, DESIGN §13). */
export class TargetRefused extends Error {}

const ALLOW_PRIVATE_HINT = "set ACTION_SERVICE_WEBHOOK_ALLOW_PRIVATE=true to allow private and loopback targets";

/** A webhook URL as given at creation: http(s), no credentials, a host; 422 otherwise. */
export function parseWebhookUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new AppError("invalid_request", "url is not a valid URL.", { issues: [{ path: "body.url", message: "is not a valid URL" }] });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new AppError("invalid_request", "url must be http or https.", { issues: [{ path: "body.url", message: "must be http or https" }] });
  if (url.username || url.password) throw new AppError("invalid_request", "url must not carry credentials.", { issues: [{ path: "body.url", message: "must not carry credentials" }] });
  return url;
}

/** Whether an address is a public unicast one (not loopback, private, link-local, reserved, multicast…). */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === "unicast";
}

/**
 * The addresses a host resolves to, every one of them public unless private targets are allowed.
 * Checked at creation and again at each delivery, and the connection is made to the address checked
 * (a name that resolves elsewhere the second time cannot turn a delivery inward).
 */
export async function resolveTarget(hostname: string, allowPrivate: boolean): Promise<{ address: string; family: number }[]> {
  const host = hostname.replace(/^\[|\]$/g, "");
  const addresses = ipaddr.isValid(host) ? [{ address: host, family: host.includes(":") ? 6 : 4 }] : await lookup(host, { all: true, verbatim: true }).catch((error: unknown) => {
    throw new TargetRefused(`${hostname} does not resolve (${(error as { code?: string }).code ?? "lookup failed"}).`);
  });
  if (addresses.length === 0) throw new TargetRefused(`${hostname} does not resolve.`);
  if (!allowPrivate) {
    const inward = addresses.find((entry) => !isPublicAddress(entry.address));
    if (inward) throw new TargetRefused(`${hostname} is a private or loopback address (${inward.address}): ${ALLOW_PRIVATE_HINT}.`);
  }
  return addresses;
}

/** Connections to receivers are kept open between deliveries (each was made to a checked address). */
const AGENTS = { "http:": new HttpAgent({ keepAlive: true, maxSockets: 16 }), "https:": new HttpsAgent({ keepAlive: true, maxSockets: 16 }) };

/** What a delivery attempt got: an HTTP status, or why there was none. */
export type AttemptResult = { status: number } | { error: string };

/** POSTs a signed webhook to the checked address; never follows redirects; gives up after `timeoutMs`. */
export async function postWebhook(url: string, body: string, headers: Record<string, string>, options: { allowPrivate: boolean; timeoutMs: number }): Promise<AttemptResult> {
  const target = new URL(url);
  let addresses: { address: string; family: number }[];
  try {
    addresses = await resolveTarget(target.hostname, options.allowPrivate);
  } catch (error) {
    return { error: error instanceof TargetRefused ? error.message : String(error) };
  }
  const pinned: LookupFunction = (_hostname, lookupOptions, callback) => {
    if ((lookupOptions as { all?: boolean }).all) (callback as unknown as (error: null, all: typeof addresses) => void)(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  };
  const requestOptions: RequestOptions = {
    method: "POST",
    headers: { ...headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), "user-agent": "action-service-webhooks/1" },
    lookup: pinned,
    timeout: options.timeoutMs,
    agent: AGENTS[target.protocol as "http:" | "https:"],
  };
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<AttemptResult>((resolve) => {
    const request = send(target, requestOptions, (response) => {
      // Only the status matters; the body is read (up to a bound) so the connection can be reused.
      let read = 0;
      response.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read > 64 * 1024) response.destroy();
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0 }));
      response.on("error", () => resolve({ status: response.statusCode ?? 0 }));
      response.on("close", () => resolve({ status: response.statusCode ?? 0 }));
    });
    request.on("timeout", () => request.destroy(new Error(`no answer within ${Math.round(options.timeoutMs / 1000)} s`)));
    request.on("error", (error: NodeJS.ErrnoException) => resolve({ error: error.code ? `${error.code}: ${error.message}` : error.message }));
    request.end(body);
  });
}
