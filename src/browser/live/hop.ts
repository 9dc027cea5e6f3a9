import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Duplex } from "node:stream";
import type { Clock } from "../../engine/clock.js";
import type { Logger } from "../../engine/logger.js";

/**
 * The hop of a live view from the coordinator it reached to the one holding its page (DESIGN §11).
 * The first has checked the origin and taken from the rate limit; this header's proof tells the
 * holder so, for this one request only.
 */
export const FORWARDED = "x-action-service-forwarded";

/**
 * How far a proof's time may be from the holder's clock, either way. The hop itself takes
 * milliseconds: the rest is room for clocks that differ between machines (docs/decisions.md).
 */
export const PROOF_WINDOW_MS = 10_000;

/** How long the coordinator holding the page has to answer the upgrade before the viewer gets a 502. */
const HOLDER_ANSWER_MS = 10_000;
const PROOF_VERSION = "v1";
const NONCE = /^[A-Za-z0-9_-]{22}$/;

/** What a proof is bound to: one request, to one coordinator. */
export interface HopRequest {
  /** The holder's origin (of its internal URL): a proof made for one coordinator is refused by another. */
  to: string;
  method: string;
  /** Path and query, as the request line carries them. */
  path: string;
  /** The live link's token. */
  token: string;
  /** The request's `Upgrade` and `Sec-WebSocket-Key` (new at each handshake); empty when absent. */
  upgrade: string;
  websocketKey: string;
}

/** Why a proof was refused, or that it holds. */
export type ProofVerdict = "valid" | "malformed" | "mismatch" | "expired" | "replayed";

/** What the holder logs for each refusal (never the proof or the token). */
export const REFUSAL_REASONS: Record<Exclude<ProofVerdict, "valid">, string> = {
  malformed: "its proof is not one a coordinator makes",
  mismatch: "its proof is for another request, or made with another master key",
  expired: `its proof is older than ${PROOF_WINDOW_MS / 1000} s, or the two coordinators' clocks differ by more`,
  replayed: "its proof was already used",
};

/**
 * Makes and checks hop proofs: an HMAC over the request under a key of their own (derived from the
 * master key every coordinator shares), its time and a nonce. A proof is accepted once, within
 * `PROOF_WINDOW_MS` of its time; the nonces of accepted proofs are kept until their window ends.
 */
export class HopProofs {
  readonly #key: Buffer;
  readonly #clock: Clock;
  /** Nonces of accepted proofs, with when each proof's window ends (ms since the epoch). */
  readonly #used = new Map<string, number>();

  constructor(key: Buffer, clock: Clock) {
    this.#key = key;
    this.#clock = clock;
  }

  make(request: HopRequest): string {
    const time = String(this.#clock.now().getTime());
    const nonce = randomBytes(16).toString("base64url");
    return [PROOF_VERSION, time, nonce, this.#mac(request, time, nonce)].join(".");
  }

  check(request: HopRequest, proof: string): ProofVerdict {
    const [version, time = "", nonce = "", mac = "", ...rest] = proof.split(".");
    if (version !== PROOF_VERSION || !/^\d{1,15}$/.test(time) || !NONCE.test(nonce) || rest.length > 0) return "malformed";
    const expected = Buffer.from(this.#mac(request, time, nonce));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "mismatch";
    const now = this.#clock.now().getTime();
    if (Math.abs(now - Number(time)) > PROOF_WINDOW_MS) return "expired";
    for (const [used, windowEnd] of this.#used) if (windowEnd < now) this.#used.delete(used);
    if (this.#used.has(nonce)) return "replayed";
    this.#used.set(nonce, Number(time) + PROOF_WINDOW_MS);
    return "valid";
  }

  #mac(request: HopRequest, time: string, nonce: string): string {
    const { to, method, path, token, upgrade, websocketKey } = request;
    // A JSON array: no field's bytes can be read as another's.
    const signed = JSON.stringify([PROOF_VERSION, to, method.toUpperCase(), path, token, upgrade.toLowerCase(), websocketKey, time, nonce]);
    return createHmac("sha256", this.#key).update(signed).digest("base64url");
  }
}

/** The request's binding for a proof: `to` is the holder's origin. */
export function hopRequestOf(request: IncomingMessage, to: string, token: string, path = request.url ?? "/"): HopRequest {
  return { to, method: request.method ?? "GET", path, token, upgrade: headerOf(request, "upgrade") ?? "", websocketKey: headerOf(request, "sec-websocket-key") ?? "" };
}

/**
 * The client's headers the holder needs to take the upgrade: never a cookie, Authorization or
 * anything else the browser sends this site. Origin stays behind too: it was checked here.
 */
const CROSSING = ["upgrade", "connection", "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "sec-websocket-protocol", "user-agent", "accept-language"];

/** The headers of the hop: the allowed ones, who the client is (for the holder's log), the holder's host and the proof. */
export function hopHeaders(request: IncomingMessage, target: URL, proof: string): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  for (const name of CROSSING) {
    const value = request.headers[name];
    if (value !== undefined) headers[name] = value;
  }
  const client = [headerOf(request, "x-forwarded-for"), request.socket.remoteAddress].filter(Boolean).join(", ");
  if (client) headers["x-forwarded-for"] = client;
  headers.host = target.host;
  headers[FORWARDED] = proof;
  return headers;
}

/**
 * Hands a WebSocket upgrade to the coordinator at `target` (http or https, as its internal URL
 * says) and joins the two connections: its answer (the 101, or a refusal) goes back as it came,
 * then bytes flow both ways until either side closes.
 */
export function forwardUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer, target: URL, proof: string, logger: Logger): void {
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  const outgoing = send(target, { method: "GET", headers: hopHeaders(request, target, proof) });
  // A holder that takes no connection, or never answers (frozen), costs the viewer seconds, not a hang.
  outgoing.setTimeout(HOLDER_ANSWER_MS, () => outgoing.destroy(new Error(`no answer within ${HOLDER_ANSWER_MS / 1000} s`)));
  const statusLine = (response: IncomingMessage): string => {
    const headers: string[] = [];
    for (let i = 0; i < response.rawHeaders.length; i += 2) headers.push(`${response.rawHeaders[i]}: ${response.rawHeaders[i + 1]}\r\n`);
    return `HTTP/1.1 ${response.statusCode} ${response.statusMessage}\r\n${headers.join("")}\r\n`;
  };
  outgoing.on("upgrade", (response, upstream, upstreamHead) => {
    upstream.setTimeout(0);
    socket.write(statusLine(response));
    if (upstreamHead.length > 0) socket.write(upstreamHead);
    if (head.length > 0) upstream.write(head);
    const close = (): void => {
      upstream.destroy();
      socket.destroy();
    };
    for (const side of [upstream, socket]) {
      side.on("error", close);
      side.on("close", close);
    }
    upstream.pipe(socket);
    socket.pipe(upstream);
  });
  // Refused there (expired, busy, too many): its answer, and the connection ends.
  outgoing.on("response", (response) => {
    response.resume();
    socket.end(`HTTP/1.1 ${response.statusCode} ${response.statusMessage}\r\nConnection: close\r\n\r\n`);
  });
  outgoing.on("error", (error) => {
    logger.warn({ err: error, to: target.origin }, "could not reach the coordinator holding the page");
    socket.end("HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n");
  });
  socket.on("error", () => outgoing.destroy());
  outgoing.end();
}

export function headerOf(request: IncomingMessage, name: string): string | null {
  const value = request.headers[name.toLowerCase()];
  return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
}
