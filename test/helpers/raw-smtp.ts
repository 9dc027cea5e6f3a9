import { connect, type Socket } from "node:net";

/**
 * An SMTP client on a bare socket, for what a mail library will not do: hold a session open with
 * NOOPs, trickle a message, send nothing at all. Replies are read whole (multi-line ones joined).
 */
export class RawSmtp {
  #buffer = "";
  #lines: string[] = [];
  #wake: (() => void) | undefined;
  /** Resolves when the server has closed the connection. */
  readonly closed: Promise<void>;

  private constructor(private readonly socket: Socket) {
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      this.#buffer += chunk;
      let end: number;
      while ((end = this.#buffer.indexOf("\r\n")) >= 0) {
        this.#lines.push(this.#buffer.slice(0, end));
        this.#buffer = this.#buffer.slice(end + 2);
      }
      this.#wake?.();
    });
    this.closed = new Promise((resolve) => socket.once("close", () => resolve()));
    void this.closed.then(() => this.#wake?.());
    socket.on("error", () => undefined);
  }

  /** Connects and reads the server's first reply (its greeting, or a refusal). */
  static async open(port: number): Promise<{ client: RawSmtp; greeting: string }> {
    const socket = connect(port, "127.0.0.1");
    await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    const client = new RawSmtp(socket);
    return { client, greeting: await client.reply() };
  }

  /** The next whole reply; rejects when the connection closes first or nothing comes within `timeoutMs`. */
  async reply(timeoutMs = 15_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    const lines: string[] = [];
    for (;;) {
      const line = this.#lines.shift();
      if (line !== undefined) {
        lines.push(line);
        if (line[3] !== "-") return lines.join("\n");
        continue;
      }
      if (this.socket.destroyed || this.socket.readableEnded) throw new Error(`connection closed; read so far: ${lines.join("\n") || "nothing"}`);
      if (Date.now() > deadline) throw new Error(`no reply in ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 100);
        this.#wake = () => (clearTimeout(timer), resolve());
      });
    }
  }

  /** Sends a command and reads its reply. */
  async command(line: string): Promise<string> {
    this.write(line);
    return this.reply();
  }

  write(line: string): void {
    this.socket.write(`${line}\r\n`);
  }

  close(): void {
    this.socket.destroy();
  }
}
