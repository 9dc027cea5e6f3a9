import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP proxy on 127.0.0.1 that a test controls, standing where a NAT, a load balancer or a bad
 * network stands between a process and its server (PostgreSQL):
 * - `freeze()`: bytes stop flowing both ways on every connection, and none is closed — a
 *   connection that dies without a word. What arrives meanwhile is held, and delivered in order
 *   by `thaw()`. New connections are accepted and frozen too, unless `{ existingOnly: true }`
 *   (then they are forwarded as usual: a client that reconnects gets through).
 * - `cut()`: every connection is reset at once, as a restarted balancer does.
 * - `connections`: how many connections it has accepted so far (a reconnect is seen as one more).
 */
export interface TcpProxy {
  readonly port: number;
  readonly connections: number;
  /** `url` (a postgres:// or http:// URL) with its host and port replaced by the proxy's. */
  through(url: string): string;
  freeze(options?: { existingOnly?: boolean }): void;
  thaw(): void;
  cut(): void;
  close(): Promise<void>;
}

interface Pipe {
  client: Socket;
  server: Socket;
  frozen: boolean;
  /** Chunks held while frozen, with the socket each is for. */
  held: { to: Socket; chunk: Buffer }[];
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pipes = new Set<Pipe>();
  let freezeNew = false;
  let accepted = 0;

  const server: Server = createServer((client) => {
    accepted++;
    const upstream = connect(target.port, target.host);
    const pipe: Pipe = { client, server: upstream, frozen: freezeNew, held: [] };
    pipes.add(pipe);
    const forward = (to: Socket) => (chunk: Buffer) => {
      if (pipe.frozen) pipe.held.push({ to, chunk });
      else to.write(chunk);
    };
    client.on("data", forward(upstream));
    upstream.on("data", forward(client));
    const end = (): void => {
      pipes.delete(pipe);
      client.destroy();
      upstream.destroy();
    };
    // A frozen pipe keeps both ends open whatever happens on one of them: the other side must
    // see nothing, as behind a dead NAT entry. It ends once thawed (or cut).
    const closed = (): void => {
      if (!pipe.frozen) end();
      else pipe.held.push({ to: client, chunk: Buffer.alloc(0) });
    };
    for (const socket of [client, upstream]) {
      socket.on("error", () => undefined);
      socket.on("close", closed);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const port = (server.address() as { port: number }).port;

  const cut = (): void => {
    for (const pipe of pipes) {
      pipe.client.resetAndDestroy();
      pipe.server.resetAndDestroy();
    }
    pipes.clear();
  };

  return {
    port,
    get connections() {
      return accepted;
    },
    through(url) {
      const changed = new URL(url);
      changed.hostname = "127.0.0.1";
      changed.port = String(port);
      return changed.toString();
    },
    freeze({ existingOnly = false } = {}) {
      freezeNew = !existingOnly;
      for (const pipe of pipes) pipe.frozen = true;
    },
    thaw() {
      freezeNew = false;
      for (const pipe of [...pipes]) {
        pipe.frozen = false;
        for (const { to, chunk } of pipe.held.splice(0)) {
          // An empty chunk marks where one side closed while frozen.
          if (chunk.length === 0 || to.destroyed) {
            pipes.delete(pipe);
            pipe.client.destroy();
            pipe.server.destroy();
            break;
          }
          to.write(chunk);
        }
      }
    },
    cut,
    async close() {
      cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
