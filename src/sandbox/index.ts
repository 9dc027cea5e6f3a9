import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import { outlastClientKeepAlive } from "../http-keep-alive.js";
import { createSandboxApp } from "./app.js";
import type { DkimKey } from "./dkim.js";

export { createSandboxApp, MAX_BODY_BYTES, type SandboxAppOptions } from "./app.js";
export { BOB_TOTP_SECRET, SEED_PASSWORD } from "./seed.js";
export { DEFAULT_DKIM_SELECTOR, SANDBOX_MAIL_DOMAIN, dkimRecord, generateDkimKey, readDkimKey, type DkimKey } from "./dkim.js";

/** Where and how to run the sandbox platform. */
export interface SandboxOptions {
  /** TCP port; 0 picks a free one. Default 8788. */
  port?: number;
  /** Interface to listen on; default 127.0.0.1. */
  host?: string;
  /**
   * Where others reach it when that is not where it listens (`SANDBOX_URL`: a proxy, another
   * name): the sign-in links it mails name this origin, and `url` is this. Default: its own address.
   */
  reachedAt?: string | undefined;
  /** Injected clock; default real time. */
  clock?: () => Date;
  /** `smtp://host:port` (`SANDBOX_SMTP_URL`): also mail codes and sign-in links to users' e-mail. */
  smtpUrl?: string | undefined;
  /** DKIM-signs its mails for sandbox.localhost (`SANDBOX_DKIM_KEY`, `SANDBOX_DKIM_SELECTOR`); unset, they go unsigned. */
  dkim?: DkimKey | undefined;
  /** Called with each mail or text that could not be delivered (default: ignored). */
  onDeliveryFailure?: (error: unknown, channel: "email" | "sms") => void;
}

/** A sandbox listening on its own origin. */
export interface RunningSandbox {
  /** Where it is reached, e.g. http://127.0.0.1:8788 (no trailing slash): `reachedAt` if given. */
  url: string;
  port: number;
  close(): Promise<void>;
}

export const DEFAULT_SANDBOX_PORT = 8788;

/** Starts the sandbox platform on its own port, with freshly seeded in-memory state. */
export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const host = options.host ?? "127.0.0.1";
  // The app is made once the port is known: the sign-in links it mails name its own origin, not
  // whatever Host a request claims — unless it listens on every interface, where only the request
  // says by which name it was reached.
  const made: { app?: ReturnType<typeof createSandboxApp> } = {};
  const server = createAdaptorServer({
    fetch: (request, env) => made.app ? made.app.fetch(request, env) : new Response("Starting", { status: 503 }),
    hostname: host,
  }) as Server;
  outlastClientKeepAlive(server);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? DEFAULT_SANDBOX_PORT, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const everywhere = host === "0.0.0.0" || host === "::";
  const urlHost = everywhere ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  const url = options.reachedAt ?? `http://${urlHost}:${port}`;
  made.app = createSandboxApp({
    ...(everywhere && options.reachedAt === undefined ? {} : { origin: url }),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.smtpUrl !== undefined ? { smtpUrl: options.smtpUrl } : {}),
    ...(options.dkim ? { dkim: options.dkim } : {}),
    ...(options.onDeliveryFailure ? { onDeliveryFailure: options.onDeliveryFailure } : {}),
  });
  return {
    url,
    port,
    close: () => new Promise<void>((resolve, reject) => {
      server.close((error) => (error ? reject(error) : resolve()));
      server.closeAllConnections();
    }),
  };
}
