import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

/** One POST a receiver got: its headers and body, and whether its signature verified. */
export interface Received {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  event: { id: string; type: string; created_at: string; data: Record<string, any> };
  verified: boolean;
  /** The status the receiver answered. */
  answered: number;
}

/**
 * A real HTTP webhook receiver on 127.0.0.1. `answer` decides each response's status (200 by
 * default); `secret` is set once the endpoint is created, and every request is verified with it.
 */
export class Receiver {
  readonly received: Received[] = [];
  secret: string | undefined;
  answer: (request: { id: string; attempt: number; event: Received["event"] }) => number = () => 200;
  #server: Server | undefined;
  #port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.#port}/hook`;
  }

  async start(port = 0): Promise<void> {
    const server = createServer((request, response) => {
      void readBody(request).then((body) => {
        const id = String(request.headers["webhook-id"]);
        const timestamp = String(request.headers["webhook-timestamp"]);
        const signature = String(request.headers["webhook-signature"]);
        let verified = false;
        try {
          new Webhook(this.secret ?? "whsec_AAAA").verify(body, { "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": signature });
          verified = true;
        } catch {
          verified = false;
        }
        const attempt = this.received.filter((item) => item.id === id).length + 1;
        const event = JSON.parse(body) as Received["event"];
        const answered = this.answer({ id, attempt, event });
        this.received.push({ id, timestamp, signature, body, event, verified, answered });
        response.writeHead(answered).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    this.#server = server;
    this.#port = (server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The statuses of an action's events the receiver accepted (2xx), in the order they arrived. */
  statusesOf(actionId: string): string[] {
    return this.received
      .filter((item) => item.answered < 300 && item.event.type === "action.updated" && item.event.data.id === actionId)
      .map((item) => item.event.data.status as string);
  }
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}

/** A Server-Sent Events client over fetch: collects each message until stopped. */
export class EventStream {
  readonly events: { id: string; event: string; data: any }[] = [];
  readonly #controller = new AbortController();
  #done: Promise<void> | undefined;
  status = 0;

  constructor(
    private readonly url: string,
    private readonly key: string,
    private readonly lastEventId?: string,
  ) {}

  async open(): Promise<void> {
    const response = await fetch(this.url, {
      headers: { authorization: `Bearer ${this.key}`, accept: "text/event-stream", ...(this.lastEventId ? { "last-event-id": this.lastEventId } : {}) },
      signal: this.#controller.signal,
    });
    this.status = response.status;
    if (!response.ok || !response.body) return;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    this.#done = (async () => {
      let buffer = "";
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          buffer += value;
          let end: number;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const fields = Object.fromEntries(block.split("\n").filter((line) => line && !line.startsWith(":")).map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1).trim()]));
            if (fields.data) this.events.push({ id: fields.id ?? "", event: fields.event ?? "", data: JSON.parse(fields.data) });
          }
        }
      } catch {
        // aborted
      }
    })();
  }

  close(): Promise<void> {
    this.#controller.abort();
    return this.#done ?? Promise.resolve();
  }
}
