import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP proxy on 127.0.0.1 in front of PostgreSQL that counts the statements a process sends it,
 * on every connection it opens (pool, lease connection, LISTEN connection, other threads' stores):
 * what the database receives, read off the wire, whatever the process counts itself. A statement
 * is a simple query (`Q`) or an extended-protocol execute (`E`); each is kept with its text (the
 * query, or the statement last parsed on that connection) and the connection's `application_name`.
 */
export interface StatementProxy {
  readonly port: number;
  /** Statements received so far, on every connection. */
  readonly count: number;
  /** Every statement received so far, in order, with when it came (`Date.now()`). */
  readonly statements: readonly SentStatement[];
  /** `url` (postgres://) with its host and port replaced by the proxy's. */
  through(url: string): string;
  close(): Promise<void>;
}

export interface SentStatement {
  at: number;
  text: string;
  application: string;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;

/** Reads one connection's frontend messages as they stream by. */
class FrontendReader {
  #buffer = Buffer.alloc(0);
  #startup = true;
  #application = "";
  #parsed = "";

  constructor(private readonly sent: (statement: SentStatement) => void) {}

  read(chunk: Buffer): void {
    this.#buffer = Buffer.concat([this.#buffer, chunk]);
    for (;;) {
      if (this.#startup) {
        if (this.#buffer.length < 8) return;
        const length = this.#buffer.readInt32BE(0);
        if (this.#buffer.length < length) return;
        const code = this.#buffer.readInt32BE(4);
        if (code !== SSL_REQUEST && code !== GSSENC_REQUEST && code !== CANCEL_REQUEST) {
          this.#startup = false;
          this.#application = startupParameter(this.#buffer.subarray(8, length), "application_name");
        }
        this.#buffer = this.#buffer.subarray(length);
        continue;
      }
      if (this.#buffer.length < 5) return;
      const type = String.fromCharCode(this.#buffer[0]!);
      const length = this.#buffer.readInt32BE(1);
      if (this.#buffer.length < 1 + length) return;
      const body = this.#buffer.subarray(5, 1 + length);
      this.#buffer = this.#buffer.subarray(1 + length);
      if (type === "Q") this.sent({ at: Date.now(), text: cString(body, 0), application: this.#application });
      else if (type === "P") this.#parsed = cString(body, body.indexOf(0) + 1);
      else if (type === "E") this.sent({ at: Date.now(), text: this.#parsed, application: this.#application });
    }
  }
}

function cString(buffer: Buffer, from: number): string {
  const end = buffer.indexOf(0, from);
  return buffer.subarray(from, end === -1 ? buffer.length : end).toString("utf8");
}

function startupParameter(parameters: Buffer, name: string): string {
  const parts = parameters.toString("utf8").split("\0");
  const at = parts.indexOf(name);
  return at === -1 ? "" : (parts[at + 1] ?? "");
}

export async function startStatementProxy(target: { host: string; port: number }): Promise<StatementProxy> {
  const sockets = new Set<Socket>();
  const statements: SentStatement[] = [];
  const server: Server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    const reader = new FrontendReader((statement) => statements.push(statement));
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => undefined);
      socket.on("close", () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on("data", (chunk: Buffer) => {
      reader.read(chunk);
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => client.write(chunk));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const port = (server.address() as { port: number }).port;
  return {
    port,
    get count() {
      return statements.length;
    },
    statements,
    through(url) {
      const changed = new URL(url);
      changed.hostname = "127.0.0.1";
      changed.port = String(port);
      return changed.toString();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
