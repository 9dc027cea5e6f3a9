/**
 * Figure (n)'s flood, a process of its own (forked by bench/inbox.ts): mails to unknown inbox
 * addresses sent to the service's SMTP listener over several raw SMTP connections, as a spammer's
 * client would send them: EHLO once per connection, then for each mail MAIL FROM, RCPT TO (an
 * address of the listener's domain with a well-formed token no account has, so each one costs the
 * listener a store look-up), and RSET after the refusal (a client has nothing to send DATA for).
 * Paced against the clock at `perSecond` (what falls behind is sent at once); answers with the
 * RCPT TO reply codes it got.
 */
import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";

export interface FloodCommand {
  type: "flood";
  port: number;
  domain: string;
  mails: number;
  connections: number;
  /** Mails a second over all connections; 0: as fast as the listener answers. */
  perSecond: number;
}

export interface FloodResult {
  type: "done";
  /** RCPT TO reply code → mails. */
  rcptCodes: Record<string, number>;
  /** Mails whose RCPT TO was accepted (should be none). */
  accepted: number;
  ms: number;
  /** Connections the listener closed before their mails were sent. */
  dropped: number;
}

/** One SMTP connection: commands sent one at a time, each reply's final line's code returned. */
class SmtpClient {
  readonly #socket: Socket;
  #buffer = "";
  #waiting: ((code: number) => void)[] = [];
  #closed = false;

  constructor(port: number) {
    this.#socket = connect(port, "127.0.0.1");
    this.#socket.setEncoding("utf8");
    this.#socket.on("data", (chunk: string) => {
      this.#buffer += chunk;
      let end: number;
      while ((end = this.#buffer.indexOf("\r\n")) >= 0) {
        const line = this.#buffer.slice(0, end);
        this.#buffer = this.#buffer.slice(end + 2);
        // "250-…" continues a reply; "250 …" ends it.
        if (line[3] !== "-") this.#waiting.shift()?.(Number(line.slice(0, 3)));
      }
    });
    const fail = (): void => {
      this.#closed = true;
      for (const waiter of this.#waiting.splice(0)) waiter(0);
    };
    this.#socket.on("close", fail);
    this.#socket.on("error", fail);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The next reply's code (0: the connection closed). */
  reply(): Promise<number> {
    if (this.#closed) return Promise.resolve(0);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  command(line: string): Promise<number> {
    const reply = this.reply();
    if (!this.#closed) this.#socket.write(`${line}\r\n`);
    return reply;
  }

  end(): void {
    this.#socket.end();
  }
}

export async function flood(command: FloodCommand): Promise<FloodResult> {
  const rcptCodes: Record<string, number> = {};
  let next = 0;
  let accepted = 0;
  let dropped = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: command.connections }, async () => {
      let client = new SmtpClient(command.port);
      const open = async (): Promise<void> => {
        if ((await client.reply()) !== 220 || (await client.command("EHLO flood.example")) !== 250) throw new Error("the listener did not greet the flood");
      };
      await open();
      for (;;) {
        const index = next++;
        if (index >= command.mails) break;
        if (command.perSecond > 0) {
          const due = start + (index / command.perSecond) * 1000;
          const wait = due - performance.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        }
        if (client.closed) {
          dropped += 1;
          client = new SmtpClient(command.port);
          await open();
        }
        await client.command("MAIL FROM:<bulk@flood.example>");
        const code = await client.command(`RCPT TO:<${randomBytes(16).toString("hex")}@${command.domain}>`);
        rcptCodes[code] = (rcptCodes[code] ?? 0) + 1;
        if (code >= 200 && code < 300) accepted += 1;
        await client.command("RSET");
      }
      await client.command("QUIT");
      client.end();
    }),
  );
  return { type: "done", rcptCodes, accepted, ms: performance.now() - start, dropped };
}

if (process.send) {
  process.on("message", (message: FloodCommand) => {
    flood(message).then(
      (result) => process.send!(result),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
  process.send({ type: "ready" });
}
