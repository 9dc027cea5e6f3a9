import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEEP_ALIVE_TIMEOUT_MS } from "../../src/http-keep-alive.js";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { startServe } from "../helpers/processes.js";

/** Longer than Node's default server keep-alive (5 s), after which the old servers closed the connection. */
const IDLE_MS = 6_000;

/**
 * A shutdown that waits for idle keep-alive connections to time out takes KEEP_ALIVE_TIMEOUT_MS
 * (75 s); a prompt one takes under a second on a quiet machine and 15 s was seen with every core
 * oversubscribed. The bound sits between, far from both.
 */
const PROMPT_SHUTDOWN_MS = KEEP_ALIVE_TIMEOUT_MS / 2;

interface Answer {
  status: number;
  /** The server's Keep-Alive header: how long it says it keeps an idle connection (`timeout=75`). */
  keepAlive: string | string[] | undefined;
  /** The client's port: one per TCP connection, so an equal port is the same connection. */
  localPort: number;
  reusedSocket: boolean;
}

/** One GET through `agent`, read to its end so the connection goes back to the agent's pool. */
function get(agent: Agent, url: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const sent = request(url, { agent }, (response) => {
      const localPort = response.socket.localPort!;
      response.resume();
      response.once("end", () => resolve({ status: response.statusCode!, keepAlive: response.headers["keep-alive"], localPort, reusedSocket: sent.reusedSocket }));
    });
    sent.once("error", reject);
    sent.end();
  });
}

/** The connections `agent` holds idle, waiting for a next request. */
function idleConnections(agent: Agent): Socket[] {
  return Object.values(agent.freeSockets).flatMap((sockets) => sockets ?? []);
}

function closed(socket: Socket): Promise<void> {
  return new Promise((resolve) => (socket.destroyed ? resolve() : socket.once("close", () => resolve())));
}

let live: LiveService;
beforeAll(async () => {
  live = await startLiveService();
});
afterAll(() => live?.close());

describe.concurrent("a connection left idle longer than Node's default 5 s is reused, not reset", () => {
  const cases = [
    { name: "the service", url: () => `${live.url}/healthz`, status: 200 },
    { name: "the sandbox", url: () => `${live.sandbox.url}/login`, status: 200 },
  ];
  for (const { name, url, status } of cases) {
    it(`${name} answers on the same connection after ${IDLE_MS} ms idle`, async () => {
      // No timeout of its own: it keeps an idle connection until the server closes it, the most patient client there is.
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const first = await get(agent, url());
        expect(first).toMatchObject({ status, reusedSocket: false, keepAlive: `timeout=${KEEP_ALIVE_TIMEOUT_MS / 1000}` });
        await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
        const second = await get(agent, url());
        expect(second).toMatchObject({ status, localPort: first.localPort, reusedSocket: true });
      } finally {
        agent.destroy();
      }
    });
  }
});

// Concurrent with the idle waits above (and each other): each has its own service and connections.
describe.concurrent("idle keep-alive connections do not hold up a shutdown", () => {
  it("the in-process service and sandbox close at once, ending their idle connections", async () => {
    const stopping = await startLiveService();
    const agent = new Agent({ keepAlive: true });
    try {
      await get(agent, `${stopping.url}/healthz`);
      await get(agent, `${stopping.sandbox.url}/login`);
      const idle = idleConnections(agent);
      expect(idle).toHaveLength(2);
      const started = Date.now();
      await stopping.close();
      await Promise.all(idle.map(closed));
      expect(Date.now() - started).toBeLessThan(PROMPT_SHUTDOWN_MS);
    } finally {
      agent.destroy();
    }
  });

  it("serve exits promptly on SIGTERM while a client holds an idle connection", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "action-service-keep-alive-"));
    const agent = new Agent({ keepAlive: true });
    try {
      const serve = await startServe({ dataDir, sandboxUrl: live.sandbox.url });
      expect((await get(agent, `${serve.url}/healthz`)).status).toBe(200);
      expect(idleConnections(agent)).toHaveLength(1);
      const started = Date.now();
      await serve.stop();
      expect(serve.child.exitCode, serve.output()).toBe(0);
      expect(Date.now() - started).toBeLessThan(PROMPT_SHUTDOWN_MS);
    } finally {
      agent.destroy();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
