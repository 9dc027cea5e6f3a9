import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { eventually } from "./wait.js";

/** `dist/cli.js`: tests that need real processes run the built service, as a user would. */
export const CLI = join(import.meta.dirname, "..", "..", "dist", "cli.js");

/**
 * Ports handed to a process that listens on them later, below the kernel's ephemeral range
 * (/proc/sys/net/ipv4/ip_local_port_range, 32768–60999 by default). A port from that range
 * (`listen(0)`) is free only until the next outgoing connection of any process on the machine takes
 * it as its local port — a browser's, a fetch's — which happened between the pick and the listen
 * (EADDRINUSE) with three test files at a time. No outgoing connection is given a port below it.
 */
const PICK_FROM = 20_000;
const PICK_TO = 32_767;

/**
 * A free TCP port on 127.0.0.1 for a child process (or a later listen) to take: a random one below
 * the ephemeral range, checked free by listening on it and closed again at once.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = PICK_FROM + Math.floor(Math.random() * (PICK_TO - PICK_FROM + 1));
    if (await canListen(port)) return port;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A `serve` running as its own process. */
export interface ServeProcess {
  child: ChildProcess;
  url: string;
  /** The admin key it printed (only on the first start of an empty data dir). */
  firstKey: string | undefined;
  /** Everything it wrote, for failure messages. */
  output(): string;
  /** kill -9: no cleanup of any kind. */
  crash(): Promise<void>;
  /** SIGTERM, and wait for it to exit. */
  stop(): Promise<void>;
}

/**
 * How long a started process (serve, the sandbox) may take to answer before its start is reported
 * failed, with what it wrote. Generous: on a machine whose every core is taken (test:loaded, the
 * CPU-hog tests) a start-up takes many times its usual second or two; slow is not broken.
 */
export const START_DEADLINE_MS = 90_000;

/** Starts `action-service serve` on a data dir and waits until `/healthz` answers. */
export async function startServe(options: { dataDir: string; sandboxUrl: string; env?: Record<string, string>; args?: string[] }): Promise<ServeProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, "serve", ...(options.args ?? [])], {
    env: {
      ...process.env,
      ACTION_SERVICE_DATA_DIR: options.dataDir,
      ACTION_SERVICE_PORT: String(port),
      SANDBOX_URL: options.sandboxUrl,
      ACTION_SERVICE_LOG_LEVEL: "warn",
      ...options.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  try {
    await eventually(() => fetch(`${url}/healthz`).then((response) => response.ok), {
      what: "serve to answer /healthz",
      timeoutMs: START_DEADLINE_MS,
      everyMs: 100,
      errorsAreNotYet: true,
      abandon: () => (child.exitCode === null ? undefined : `it exited (${child.exitCode})`),
    });
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}: ${output}`);
  }
  const lines = output.split("\n").map((line) => line.trim());
  const keyLine = lines.findIndex((line) => line.startsWith("First start"));
  return {
    child,
    url,
    firstKey: keyLine >= 0 ? lines[keyLine + 1] : undefined,
    output: () => output,
    async crash() {
      child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** A small REST client for a service process. */
export function restClient(url: () => string, key: string) {
  return async (method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const response = await fetch(url() + path, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, json: text ? JSON.parse(text) : undefined };
  };
}
