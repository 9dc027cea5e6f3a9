import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import { outlastClientKeepAlive } from "../http-keep-alive.js";
import { createSandboxApp } from "./app.js";

export { createSandboxApp, MAX_BODY_BYTES, type SandboxAppOptions } from "./app.js";
export { BOB_TOTP_SECRET, SEED_PASSWORD } from "./seed.js";

/** Where and how to run the sandbox platform. */
export interface SandboxOptions {
  /** TCP port; 0 picks a free one. Default 8788. */
  port?: number;
  /** Interface to listen on; default 127.0.0.1. */
  host?: string;
  /** Injected clock; default real time. */
  clock?: () => Date;
}

/** A sandbox listening on its own origin. */
export interface RunningSandbox {
  /** e.g. http://127.0.0.1:8788 (no trailing slash) */
  url: string;
  port: number;
  close(): Promise<void>;
}

export const DEFAULT_SANDBOX_PORT = 8788;

/** Starts the sandbox platform on its own port, with freshly seeded in-memory state. */
export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const host = options.host ?? "127.0.0.1";
  const app = createSandboxApp(options.clock ? { clock: options.clock } : {});
  const server = createAdaptorServer({ fetch: app.fetch, hostname: host }) as Server;
  outlastClientKeepAlive(server);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? DEFAULT_SANDBOX_PORT, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    close: () => new Promise<void>((resolve, reject) => {
      server.close((error) => (error ? reject(error) : resolve()));
      server.closeAllConnections();
    }),
  };
}
