import { serve, type ServerType } from "@hono/node-server";
import type { Hono } from "hono";
import type { IncomingMessage, Server } from "node:http";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { createApp } from "./api/app.js";
import { ConfigError, type Config } from "./config.js";
import { systemClock, type Clock } from "./engine/clock.js";
import { Engine, type EngineOptions } from "./engine/engine.js";
import type { ActionExecutor, PlatformInfo } from "./engine/execution/index.js";
import { type IssuedKey, RateLimiter } from "./engine/access/index.js";
import type { Logger } from "./engine/logger.js";
import { outlastClientKeepAlive } from "./http-keep-alive.js";
import { Sealer, Store, loadMasterKey, openStore, type StoreLocation } from "./store/index.js";

/** The parts a running service is made of; the CLI, the demo and tests compose them here. */
export interface Service {
  config: Config;
  store: Store;
  engine: Engine;
  app: Hono;
  /** The first admin key, when this start created the first workspace. */
  firstKey: IssuedKey | undefined;
  close(): Promise<void>;
}

export interface ServiceParts {
  executor: ActionExecutor;
  platforms: readonly PlatformInfo[];
  logger: Logger;
  clock?: Clock;
  isReady?: () => boolean;
  /** Extra surfaces on the HTTP app (MCP over HTTP, live browser); they share the per-key limiter. */
  extend?: (app: Hono, engine: Engine, limiter: RateLimiter) => void;
  /** What kind of process runs actions here (`serve`, `mcp`, `demo`), for the runners table. */
  runnerKind?: string;
  /** Lease timings (tests shorten them). */
  runner?: EngineOptions["runner"];
  /** Webhook retry timings (tests shorten them); whether private targets are allowed comes from the config. */
  webhooks?: Omit<NonNullable<EngineOptions["webhooks"]>, "allowPrivate">;
  /** How often due health checks are looked for (tests shorten it). */
  healthCheckTickMs?: number;
  /**
   * false: open the store without starting the engine (no first workspace, no restart
   * recovery), for commands that run beside a live server such as `keys create`.
   */
  start?: boolean;
}

/** Where the store lives: PostgreSQL when `ACTION_SERVICE_DATABASE_URL` is set, else the data dir's SQLite file. */
export function storeLocation(config: Config): StoreLocation {
  return config.databaseUrl ? { databaseUrl: config.databaseUrl, listenUrl: config.databaseListenUrl } : { sqliteFile: join(config.dataDir, "action-service.db") };
}

/**
 * The master key: `ACTION_SERVICE_MASTER_KEY`, or on one machine the data dir's `master.key` (made on
 * first start). With PostgreSQL it must be given: every coordinator unseals what another sealed.
 */
export function masterKeyOf(config: Config): Buffer {
  if (config.databaseUrl && !config.masterKey) {
    throw new ConfigError(
      "ACTION_SERVICE_MASTER_KEY is required with ACTION_SERVICE_DATABASE_URL: every coordinator must unseal what another sealed, so they share one key (e.g. `openssl rand -hex 32`, the same on every machine).",
    );
  }
  return loadMasterKey(config.dataDir, config.masterKey);
}

/** Opens the store the configuration names (applying pending migrations). */
export async function openConfiguredStore(config: Config): Promise<Store> {
  return openStore(storeLocation(config), new Sealer(masterKeyOf(config)));
}

/** The one place that opens the database and builds the engine. */
export async function createService(config: Config, parts: ServiceParts): Promise<Service> {
  const location = storeLocation(config);
  const masterKey = masterKeyOf(config);
  const store = await openStore(location, new Sealer(masterKey));
  const engine = new Engine({
    store,
    executor: parts.executor,
    platforms: parts.platforms,
    publicUrl: config.publicUrl,
    internalUrl: config.internalUrl,
    logger: parts.logger,
    challengeTtlSeconds: config.challengeTtlSeconds,
    maxConcurrent: config.maxConcurrentActions,
    maxPaused: config.maxPausedActions,
    runner: { kind: parts.runnerKind ?? "serve", ...parts.runner },
    freeCredits: config.freeCredits,
    x402: config.x402,
    inbox: { mailDomain: config.mailDomain, smtpOn: config.smtp.port !== undefined },
    healthChecks: { intervalMinutes: config.healthCheckMinutes, ...(parts.healthCheckTickMs ? { tickMs: parts.healthCheckTickMs } : {}) },
    // On the real clock deliveries get their own thread; a test's clock keeps them on this loop, where it moves them.
    webhooks: { allowPrivate: config.webhookAllowPrivate, ...parts.webhooks, thread: parts.clock ? undefined : { location, masterKey } },
    ...(parts.clock ? { clock: parts.clock } : {}),
  });
  const starting = parts.start ?? true;
  const firstKey = starting ? await engine.keys.bootstrap() : undefined;
  if (starting) await engine.start();
  // Several coordinators draw from one bucket per key (PostgreSQL); one machine keeps its buckets in memory.
  const limiter = new RateLimiter(config.rateLimitPerMinute, parts.clock ?? systemClock, store.dialect === "postgres" ? store : undefined);
  const app = createApp({
    engine,
    logger: parts.logger,
    limiter,
    ...(parts.clock ? { clock: parts.clock } : {}),
    ...(parts.isReady ? { isReady: parts.isReady } : {}),
    extend: (hono) => parts.extend?.(hono, engine, limiter),
  });
  return {
    config,
    store,
    engine,
    app,
    firstKey,
    async close() {
      await engine.stop();
      await store.close();
    },
  };
}

/** Serves the app on the configured host and port; resolves once listening. */
export function listen(
  app: Hono,
  host: string,
  port: number,
  onUpgrade?: (request: IncomingMessage, socket: Duplex, head: Buffer) => boolean,
): Promise<{ server: ServerType; port: number; close(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname: host, port }, (info) =>
      resolve({
        server,
        port: info.port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            (server as { closeAllConnections?: () => void }).closeAllConnections?.();
          }),
      }),
    );
    outlastClientKeepAlive(server as Server);
    server.once("error", reject);
    server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (!onUpgrade?.(request, socket, head)) socket.destroy();
    });
  });
}
