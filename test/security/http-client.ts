import { Agent, request } from "node:http";

/** A request exactly as given: node:http sends the path untouched (fetch would normalise `%2e%2e`). */
export interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** Send the body in chunks without Content-Length (Transfer-Encoding: chunked). */
  chunked?: boolean;
  /**
   * An answer that is an endless event stream (`text/event-stream`, REST's `GET /v1/events`) is
   * read up to its first bytes, then the connection is closed, as a client going away would.
   * (MCP's streamed answers end by themselves: leave this off for /mcp.)
   */
  eventStreamFirstBytes?: boolean;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One kept-alive connection: a request after another goes over the same socket, as a client's would. */
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const CHUNK_BYTES = 64 * 1024;
/** Above the longest wait a request may ask for (50 s over MCP). */
const TIMEOUT_MS = 90_000;
/** How long an event stream has to send its first bytes. */
const FIRST_BYTES_MS = 5_000;

/** Sends one request to 127.0.0.1:`port`; rejects only when no response came back at all. */
export function sendRaw(port: number, raw: RawRequest): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    let answered = false;
    // Framing stated outright: node:http would send a GET's body unframed, which no server can parse.
    const framing = raw.body ? (raw.chunked ? { "transfer-encoding": "chunked" } : { "content-length": String(raw.body.length) }) : {};
    const headers = { ...raw.headers, ...framing };
    const outgoing = request({ host: "127.0.0.1", port, method: raw.method, path: raw.path, headers, agent, timeout: TIMEOUT_MS }, (response) => {
      answered = true;
      if (raw.eventStreamFirstBytes && String(response.headers["content-type"] ?? "").startsWith("text/event-stream")) {
        const hangUp = (body: string): void => {
          clearTimeout(timer);
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body });
          // Closes this connection (the agent opens another for the next request): the server sees the client go.
          outgoing.destroy();
        };
        const timer = setTimeout(() => hangUp(""), FIRST_BYTES_MS);
        response.once("data", (chunk: Buffer) => hangUp(chunk.toString("utf8")));
        response.once("end", () => hangUp(""));
        return;
      }
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString("utf8") }));
      response.on("error", reject);
    });
    outgoing.on("timeout", () => outgoing.destroy(new Error(`no response within ${TIMEOUT_MS} ms`)));
    // A server may answer an oversized body before reading it, then close: the write then fails, the answer stands.
    outgoing.on("error", (error) => {
      if (!answered) reject(error);
    });
    if (raw.body && raw.chunked) {
      for (let offset = 0; offset < raw.body.length; offset += CHUNK_BYTES) outgoing.write(raw.body.subarray(offset, offset + CHUNK_BYTES));
    } else if (raw.body) outgoing.write(raw.body);
    outgoing.end();
  });
}

/**
 * Whether the connection a request was answered on still carries the next request: a
 * server that answers before reading a body must still read (or refuse) the rest of it,
 * or say `Connection: close`. Undefined when it does; else what the next request got.
 */
export async function nextRequestProblem(port: number): Promise<string | undefined> {
  try {
    // `Connection: close` ends that connection after this check, so a late hang-up of it cannot land on a later case.
    const next = await sendRaw(port, { method: "GET", path: "/healthz", headers: { connection: "close" } });
    return next.status === 200 ? undefined : `the next request on the connection got ${next.status}`;
  } catch (error) {
    return `the connection was dropped after the answer: the next request on it got "${String(error)}"`;
  }
}

/** The JSON-RPC messages of a Streamable HTTP answer: one JSON body, or the `data:` lines of an SSE stream. */
export function jsonRpcMessages(response: RawResponse): unknown[] {
  const type = String(response.headers["content-type"] ?? "");
  if (type.includes("text/event-stream")) {
    return response.body
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trim())
      // An event without data (a resumability priming event) carries no message.
      .filter((data) => data !== "")
      .map((data) => JSON.parse(data) as unknown);
  }
  if (response.body.trim() === "") return [];
  const parsed = JSON.parse(response.body) as unknown;
  return Array.isArray(parsed) ? parsed : [parsed];
}

/** Lets the keep-alive sockets go, so a process can exit. */
export function closeConnections(): void {
  agent.destroy();
}
