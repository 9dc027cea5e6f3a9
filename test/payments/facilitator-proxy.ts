import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";

/**
 * What the proxy does with what the service sends the facilitator (`/supported` always passes):
 * - `pass`: forwards it;
 * - `down`: hangs up at once, as an unreachable facilitator;
 * - `slow`: forwards nothing and answers nothing until the service hangs up (its own timeout);
 * - `drain-before-settle`: runs `beforeSettle` (a real transfer) before forwarding a settlement;
 * - `hold-settle`: a settlement is never forwarded; the service waits until it hangs up or dies;
 * - `settle-then-drop`: a settlement is forwarded (on chain once the facilitator answers), then
 *   the connection is dropped: the answer is lost;
 * - `settle-then-hold`: as `settle-then-drop`, but the answer is held until the service hangs up or dies.
 */
export type ProxyMode = "pass" | "down" | "slow" | "drain-before-settle" | "hold-settle" | "settle-then-drop" | "settle-then-hold";

/** A pass-through proxy between the service and the facilitator, which a test can make misbehave. */
export interface FacilitatorProxy {
  url: string;
  mode: ProxyMode;
  /** Paths the proxy was asked for, in order. */
  seen: string[];
  /** Run before a settlement is forwarded in `drain-before-settle` mode. */
  beforeSettle: (() => Promise<void>) | undefined;
  /** Resolves when a settlement is held in `hold-settle` mode, or has landed in `settle-then-hold` mode. */
  settleArrived(): Promise<void>;
  /**
   * Hangs up on every request held (nothing more is forwarded), then waits until every request
   * it forwarded has been answered: whatever a test sent the facilitator has landed on chain.
   */
  quiet(): Promise<void>;
  close(): Promise<void>;
}

/** Resolves when the service hangs up on `outgoing` (its timeout, its death, or `quiet()`). */
function hungUp(outgoing: ServerResponse): Promise<void> {
  if (outgoing.destroyed) return Promise.resolve();
  return new Promise((resolve) => outgoing.once("close", () => resolve()));
}

export function startProxy(target: string): Promise<FacilitatorProxy> {
  const upstream = new URL(target);
  let onSettle: (() => void) | undefined;
  const held = new Set<ServerResponse>();
  const handling = new Set<Promise<void>>();
  const hold = async (outgoing: ServerResponse): Promise<void> => {
    held.add(outgoing);
    await hungUp(outgoing);
    held.delete(outgoing);
  };
  const state: FacilitatorProxy = {
    url: "",
    mode: "pass",
    seen: [],
    beforeSettle: undefined,
    settleArrived: () => new Promise<void>((resolve) => (onSettle = resolve)),
    async quiet() {
      for (const outgoing of held) outgoing.destroy();
      while (handling.size > 0) await Promise.all(handling);
    },
    async close() {
      await state.quiet();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const forward = (incoming: IncomingMessage, body: Buffer): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> =>
    new Promise((resolve, reject) => {
      const options = { host: upstream.hostname, port: upstream.port, method: incoming.method ?? "GET", path: incoming.url ?? "/", headers: { ...incoming.headers, host: upstream.host } };
      const outgoing = httpRequest(options, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => resolve({ status: response.statusCode ?? 502, headers: response.headers, body: Buffer.concat(chunks) }));
      });
      outgoing.on("error", reject);
      outgoing.end(body);
    });
  const handle = async (incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const path = incoming.url ?? "/";
    const mode = path === "/supported" ? "pass" : state.mode;
    if (path !== "/supported") state.seen.push(path);
    if (mode === "down") {
      incoming.socket.destroy();
      return;
    }
    if (mode === "slow") return hold(outgoing);
    if (path === "/settle" && mode === "hold-settle") {
      const holding = hold(outgoing);
      onSettle?.();
      return holding;
    }
    try {
      if (path === "/settle" && mode === "drain-before-settle") await state.beforeSettle?.();
      const answer = await forward(incoming, Buffer.concat(chunks));
      if (path === "/settle" && mode === "settle-then-drop") {
        outgoing.destroy();
        return;
      }
      if (path === "/settle" && mode === "settle-then-hold") {
        const holding = hold(outgoing);
        onSettle?.();
        return await holding;
      }
      if (!outgoing.destroyed) outgoing.writeHead(answer.status, answer.headers as never).end(answer.body);
    } catch (error) {
      if (!outgoing.destroyed) outgoing.writeHead(502).end(String(error));
    }
  };
  const server = createServer((incoming, outgoing) => {
    const handled = handle(incoming, outgoing).finally(() => handling.delete(handled));
    handling.add(handled);
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      state.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      resolve(state);
    }),
  );
}
