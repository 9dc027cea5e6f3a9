import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";

/**
 * A TCP proxy between one coordinator and PostgreSQL that the fault suite controls, and that
 * reads the PostgreSQL wire protocol going to the server (never changing a byte of it) to know
 * what each connection sends:
 *
 * - `freezeAll()` / `thaw()`: nothing crosses any connection, current or new, in either
 *   direction, and nothing is closed — the coordinator's transactions stay open on the server,
 *   holding their locks, as when the process is paused by the kernel or a long GC. What was sent
 *   meanwhile crosses, in order, at the thaw.
 * - `freezeAfter(sql)`: freezes every connection right after one sends a statement starting
 *   with `sql` (a simple Query, or a Parse and what follows it up to its Sync: the server has the
 *   statement and runs it; its answer is held).
 * - `blackhole(connection)`: that connection's bytes are dropped both ways from now on, and it
 *   is never closed — a connection that died silently behind a NAT. (TCP keep-alive probes are
 *   answered by this proxy's own kernel, so only a ping the client sends through it can notice.)
 * - `loseAnswer(sql, { at, applied })`: the connection that sends a statement starting with `sql`
 *   loses the answer to that statement (`at: "statement"`, one outside a transaction) or to its
 *   next COMMIT (`at: "commit"`), and is closed both ways: the client cannot know what happened.
 *   `applied`: the server got it and answered (it committed) before the close; otherwise it never
 *   got it (the transaction rolls back with its session).
 * - `listenConnection()`: the connection that sent `LISTEN` (the change feed's).
 *
 * A connection the server closes (a PostgreSQL restart) is closed towards the client too, at
 * once, or at the thaw when frozen.
 */
export class PostgresProxy {
  readonly connections: ProxiedConnection[] = [];
  #frozen = false;
  #trigger: { sql: string; fired: (event: FreezeEvent) => void } | undefined;
  #fire: (() => void) | undefined;
  #loss: (LossPlan & { sql: string; fired: (event: FreezeEvent) => void }) | undefined;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** Listens on a free port of 127.0.0.1 and forwards every connection to `target`. */
  static async start(target: { host: string; port: number }): Promise<PostgresProxy> {
    const accepted: ((client: Socket) => void)[] = [];
    const server = createServer((client) => accepted[0]!(client));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    const proxy = new PostgresProxy(server, (server.address() as AddressInfo).port);
    accepted.push((client) => proxy.accept(client, target));
    return proxy;
  }

  /** `databaseUrl` with its host and port replaced by this proxy's. */
  url(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.hostname = "127.0.0.1";
    url.port = String(this.port);
    return url.toString();
  }

  get frozen(): boolean {
    return this.#frozen;
  }

  freezeAll(): void {
    this.#frozen = true;
  }

  thaw(): void {
    this.#frozen = false;
    for (const connection of this.connections) connection.flush();
  }

  /** Resolves once a connection has sent a statement starting with `sql` (case-insensitive) and every connection is frozen. */
  freezeAfter(sql: string): Promise<FreezeEvent> {
    return new Promise((fired) => (this.#trigger = { sql: sql.toLowerCase(), fired }));
  }

  /** Resolves once a connection that sent a statement starting with `sql` (case-insensitive) lost the answer `plan` says, and was closed. */
  loseAnswer(sql: string, plan: LossPlan): Promise<FreezeEvent> {
    return new Promise((fired) => (this.#loss = { ...plan, sql: sql.toLowerCase(), fired }));
  }

  /** The connection that sent `LISTEN …`, if one has. */
  listenConnection(): ProxiedConnection | undefined {
    return this.connections.find((connection) => connection.statements.some((statement) => /^listen\s/i.test(statement)));
  }

  /** Connections still open on both sides. */
  get open(): ProxiedConnection[] {
    return this.connections.filter((connection) => !connection.closed);
  }

  async close(): Promise<void> {
    for (const connection of this.connections) connection.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, target: { host: string; port: number }): void {
    const connection = new ProxiedConnection(this.connections.length + 1, client, connect(target.port, target.host), {
      frozen: () => this.#frozen,
      sent: (connection, statement) => {
        const trigger = this.#trigger;
        if (!trigger || !statement.toLowerCase().startsWith(trigger.sql)) return false;
        this.#trigger = undefined;
        this.#fire = () => trigger.fired({ connection, statement, at: Date.now() });
        return true;
      },
      freeze: () => {
        this.#frozen = true;
        this.#fire?.();
        this.#fire = undefined;
      },
      lose: (statement) => {
        const loss = this.#loss;
        if (!loss || !statement.toLowerCase().startsWith(loss.sql)) return undefined;
        this.#loss = undefined;
        return loss;
      },
    });
    this.connections.push(connection);
  }
}

/** What `freezeAfter` saw: the connection, the statement and when (ms since the epoch). */
export interface FreezeEvent {
  connection: ProxiedConnection;
  statement: string;
  at: number;
}

/** Which answer `loseAnswer` loses, and whether the server got what it answers. */
export interface LossPlan {
  at: "statement" | "commit";
  applied: boolean;
}

/** The protocol's untyped first messages (SSLRequest, GSSENCRequest) are answered with one byte and followed by another untyped one. */
const NEGOTIATION_CODES = new Set([80_877_103, 80_877_104]);
const CANCEL_REQUEST = 80_877_102;

interface ConnectionHooks {
  frozen(): boolean;
  /** A statement is on its way to the server; true when every connection must freeze right after it. */
  sent(connection: ProxiedConnection, statement: string): boolean;
  /** Freezes every connection (the watched statement has been forwarded). */
  freeze(): void;
  /** A statement is on its way to the server: the loss planned for it, if `loseAnswer` watches for it. */
  lose(statement: string): (LossPlan & { fired: (event: FreezeEvent) => void }) | undefined;
}

/** What one client message does: crosses, crosses and freezes every connection, is dropped, or is dropped and the connection closed. */
type Verdict = "forward" | "freeze" | "drop" | "close";

/** One client's connection through the proxy. */
export class ProxiedConnection {
  /** Every statement it sent (simple Query and Parse texts), in order. */
  readonly statements: string[] = [];
  #blackholed = false;
  #closed = false;
  #toServer: Buffer[] = [];
  #toClient: Buffer[] = [];
  #pendingEnd: Socket[] = [];
  // Client → server parsing: untyped start-up messages first, then typed ones.
  #partial = Buffer.alloc(0);
  #started = false;
  /** A Parse matched: freeze after the next Sync or Flush. */
  #freezeAtSync = false;
  /** A loss planned on this connection, and where it is: waiting for its COMMIT, or in the statement up to its Sync. */
  #loss: (LossPlan & { fired: (event: FreezeEvent) => void; statement: string; inStatement: boolean }) | undefined;
  /** The server got what it must answer: its answer is dropped, and the connection closed once it has come. */
  #closeOnAnswer: (() => void) | undefined;

  constructor(
    readonly n: number,
    private readonly client: Socket,
    private readonly server: Socket,
    private readonly hooks: ConnectionHooks,
  ) {
    client.setNoDelay(true);
    server.setNoDelay(true);
    client.on("data", (chunk: Buffer) => this.#fromClient(chunk));
    server.on("data", (chunk: Buffer) => this.#fromServer(chunk));
    for (const [from, to] of [
      [client, server],
      [server, client],
    ] as const) {
      from.on("error", () => undefined);
      from.on("close", () => this.#ended(to));
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  get blackholed(): boolean {
    return this.#blackholed;
  }

  /** Drops this connection's bytes both ways from now on, and never closes it. */
  blackhole(): void {
    this.#blackholed = true;
    this.#toServer = [];
    this.#toClient = [];
  }

  /** Sends what was held while frozen (nothing, once blackholed). */
  flush(): void {
    if (this.#blackholed || this.hooks.frozen()) return;
    for (const chunk of this.#toServer.splice(0)) this.server.write(chunk);
    for (const chunk of this.#toClient.splice(0)) this.client.write(chunk);
    for (const socket of this.#pendingEnd.splice(0)) socket.destroy();
  }

  destroy(): void {
    this.#closed = true;
    this.client.destroy();
    this.server.destroy();
  }

  #ended(other: Socket): void {
    if (this.#blackholed) return;
    this.#closed = true;
    if (this.hooks.frozen()) this.#pendingEnd.push(other);
    else other.destroy();
  }

  #send(to: Socket, held: Buffer[], chunk: Buffer): void {
    if (this.#blackholed) return;
    if (this.hooks.frozen() || held.length > 0) {
      held.push(chunk);
      this.flush();
      return;
    }
    to.write(chunk);
  }

  /** Forwards what the server sent, but an answer `loseAnswer` loses: that one is dropped, and the connection closed once it has come (its ReadyForQuery). */
  #fromServer(chunk: Buffer): void {
    const close = this.#closeOnAnswer;
    if (!close) return this.#send(this.client, this.#toClient, chunk);
    if (!chunk.includes(READY_FOR_QUERY)) return;
    this.#closeOnAnswer = undefined;
    close();
  }

  /** Forwards what the client sent, whole messages only, freezing right after a watched statement, dropping what a planned loss drops. */
  #fromClient(chunk: Buffer): void {
    const pending = this.#partial.length === 0 ? chunk : Buffer.concat([this.#partial, chunk]);
    let forwarded = 0;
    let at = 0;
    for (let message = this.#messageAt(pending, at); message; message = this.#messageAt(pending, at)) {
      const start = at;
      at = message.end;
      const verdict = this.#inspect(message.type, message.body);
      if (verdict === "forward") continue;
      if (verdict === "freeze") {
        // Up to and including the statement (or its Sync): the server has it; the rest waits for the thaw.
        this.#send(this.server, this.#toServer, pending.subarray(forwarded, at));
        forwarded = at;
        this.hooks.freeze();
        continue;
      }
      this.#send(this.server, this.#toServer, pending.subarray(forwarded, start));
      forwarded = at;
      if (verdict === "close") return this.#lost();
    }
    if (at > forwarded) this.#send(this.server, this.#toServer, pending.subarray(forwarded, at));
    this.#partial = Buffer.from(pending.subarray(at));
  }

  /** The planned loss happened: the connection is closed both ways, and `loseAnswer` resolves. */
  #lost(): void {
    const loss = this.#loss!;
    this.#loss = undefined;
    this.destroy();
    loss.fired({ connection: this, statement: loss.statement, at: Date.now() });
  }

  /** What to do with a message of the statement (or COMMIT) whose answer is lost: `applied`, it crosses and its answer closes the connection; otherwise it is dropped, and the connection closed at its end. */
  #losing(type: string | undefined): Verdict {
    const end = type === "Q" || type === "S";
    if (this.#loss!.applied) {
      if (end) this.#closeOnAnswer = () => this.#lost();
      return "forward";
    }
    return end ? "close" : "drop";
  }

  /** The message starting at `at`, if it is all there. */
  #messageAt(buffer: Buffer, at: number): { type: string | undefined; body: Buffer; end: number } | undefined {
    if (!this.#started) {
      if (buffer.length - at < 8) return undefined;
      const length = buffer.readInt32BE(at);
      if (buffer.length - at < length) return undefined;
      const code = buffer.readInt32BE(at + 4);
      if (!NEGOTIATION_CODES.has(code) && code !== CANCEL_REQUEST) this.#started = true;
      return { type: undefined, body: buffer.subarray(at + 8, at + length), end: at + length };
    }
    if (buffer.length - at < 5) return undefined;
    const length = buffer.readInt32BE(at + 1);
    if (buffer.length - at < 1 + length) return undefined;
    return { type: String.fromCharCode(buffer[at]!), body: buffer.subarray(at + 5, at + 1 + length), end: at + 1 + length };
  }

  /** Notes a statement, and says what to do with this message. */
  #inspect(type: string | undefined, body: Buffer): Verdict {
    if (this.#loss?.inStatement) {
      if (type === "Q" || type === "S") this.#loss.inStatement = false;
      return this.#losing(type);
    }
    if (type === "Q") {
      const text = cString(body, 0).trim();
      if (this.#loss && /^commit\b/i.test(text)) {
        this.statements.push(text);
        return this.#losing(type);
      }
      return this.#statement(text, true);
    }
    if (type === "P") {
      // Parse: the statement's name, then its text.
      const name = cString(body, 0);
      return this.#statement(cString(body, Buffer.byteLength(name) + 1).trim(), false);
    }
    if ((type === "S" || type === "H") && this.#freezeAtSync) {
      this.#freezeAtSync = false;
      return "freeze";
    }
    return "forward";
  }

  #statement(text: string, simple: boolean): Verdict {
    this.statements.push(text);
    const loss = this.hooks.lose(text);
    if (loss) {
      this.#loss = { ...loss, statement: text, inStatement: loss.at === "statement" };
      if (loss.at === "statement") {
        if (simple) this.#loss.inStatement = false;
        return this.#losing(simple ? "Q" : "P");
      }
    }
    if (!this.hooks.sent(this, text)) return "forward";
    if (simple) return "freeze";
    this.#freezeAtSync = true;
    return "forward";
  }
}

/** The server's ReadyForQuery ('Z', length 5): it has answered everything it was sent. */
const READY_FOR_QUERY = Buffer.from([0x5a, 0, 0, 0, 5]);

function cString(buffer: Buffer, from: number): string {
  const end = buffer.indexOf(0, from);
  return buffer.toString("utf8", from, end < 0 ? buffer.length : end);
}
