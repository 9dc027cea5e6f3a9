import type { Hono } from "hono";
import { BrowserExecutor } from "./browser/executor.js";
import { BrowserPool, preloadBrowser } from "./browser/pool.js";
import type { Config } from "./config.js";
import type { Clock } from "./engine/clock.js";
import type { Engine } from "./engine/engine.js";
import type { Logger } from "./engine/logger.js";
import type { Store } from "./store/index.js";
import { LiveHub, type LiveHubOptions } from "./browser/live/hub.js";
import { mountLive } from "./browser/live/routes.js";
import { createService, listen, type Service, type ServiceParts } from "./main.js";
import { dnsResolver, mountSmsUrl, startMailListener, withTxtRecords, type MailListener } from "./inbox/index.js";
import { defaultAllowedHosts, type OriginPolicy } from "./api/origin.js";
import { mountMcpHttp, type McpHttpEndpoint } from "./mcp/http.js";
import { mountMetrics } from "./api/metrics.js";
import { ServiceMetrics } from "./metrics/index.js";
import { mountWebApp } from "./web/index.js";
import { enabledPlatforms } from "./platforms/index.js";
import { knownDrivers } from "./platforms/known.js";
import type { Driver } from "./platforms/driver.js";
import { dkimRecord, generateDkimKey, readDkimKey, startSandbox, type RunningSandbox } from "./sandbox/index.js";

export interface ServerOptions {
  logger: Logger;
  /** Also start the sandbox platform on SANDBOX_PORT (serve --sandbox, demo). */
  sandbox?: boolean;
  /** Listen for HTTP (REST, MCP, live links); false for an in-process run. */
  listen?: boolean;
  clock?: Clock;
  /** What kind of process this is (`serve`, `mcp`, `demo`): its runner registers as such. */
  runnerKind?: string;
  /** Runner lease timings (tests shorten them). */
  runner?: ServiceParts["runner"];
  /** Webhook retry timings (tests shorten them). */
  webhooks?: ServiceParts["webhooks"];
  /** How often due health checks are looked for (tests shorten it). */
  healthCheckTickMs?: number;
  /** Seams for tests: how long an unwatched sign-in page stays open, and how many one key may hold. */
  live?: Pick<LiveHubOptions, "unwatchedMs" | "maxPagesPerKey">;
  /** Mounts more on the HTTP app (REST, MCP over HTTP and the live browser are always there). */
  extend?: (app: Hono, engine: Engine, pool: BrowserPool, executor: BrowserExecutor) => void;
  /** Drivers beside the built-in ones and ACTION_SERVICE_DRIVERS', handed over in-process (a test's); checked as those are. */
  drivers?: readonly Driver[];
}

/** A running service: browser pool, engine, HTTP, and the sandbox when asked for. */
export interface RunningServer {
  service: Service;
  pool: BrowserPool;
  executor: BrowserExecutor;
  sandbox: RunningSandbox | undefined;
  /** The live-browser pages (sign-in pages included). */
  hub: LiveHub;
  /** Where the HTTP server listens (its real port when 0 was asked for). */
  url: string | undefined;
  /** The inbox's SMTP listener, when `ACTION_SERVICE_SMTP_PORT` is set (DESIGN §15). */
  mail: MailListener | undefined;
  close(): Promise<void>;
}

/** The composition root of a service process: reads nothing from the environment itself. */
export async function startServer(config: Config, options: ServerOptions): Promise<RunningServer> {
  // A driver that does not load, and a platform no driver has, are refused before anything starts.
  const known = await knownDrivers(config, options.logger, options.drivers);
  // The sandbox run here signs its mails (its driver declares its senders, DESIGN §15): with the
  // configured key, else a fresh one. No DNS publishes it: the inbox's DKIM look-ups answer it here.
  const { keyPath, selector } = config.sandboxDkim;
  const sandboxKey = options.sandbox ? (keyPath ? readDkimKey(keyPath, selector) : generateDkimKey(selector)) : undefined;
  const dns = dnsResolver(config.dnsServers);
  const record = sandboxKey && dkimRecord(sandboxKey);
  const dkimResolver = record ? withTxtRecords({ [record.name]: record.value }, dns) : dns;
  const sandbox = options.sandbox
    ? await startSandbox({
      port: config.sandboxPort,
      reachedAt: config.sandboxUrlGiven ? config.sandboxUrl : undefined,
      smtpUrl: config.sandboxSmtpUrl,
      dkim: sandboxKey,
      onDeliveryFailure: (error, channel) => options.logger.warn({ err: error, channel }, "the sandbox could not deliver a sign-in message"),
    })
    : undefined;
  const pool = new BrowserPool({
    executablePath: config.browserExecutablePath,
    endpoints: config.browserEndpoints,
    idleMs: config.idleContextSeconds * 1000,
    maxContexts: config.warmContexts,
    maxPages: config.warmPages,
    pageIdleMs: config.warmPageSeconds * 1000,
    logger: options.logger,
  });
  const { drivers, baseUrls } = enabledPlatforms(sandbox?.url ?? config.sandboxUrl, config.platforms, known);
  const executor = new BrowserExecutor({ pool, drivers, baseUrls, pageTimeoutMs: config.pageTimeoutSeconds * 1000 });
  let onUpgrade: ReturnType<typeof mountLive> | undefined;
  let mcp: McpHttpEndpoint | undefined;
  let hub: LiveHub | undefined;
  let metrics: ServiceMetrics | undefined;
  const service = await createService(config, {
    executor,
    platforms: drivers.map((driver) => driver.platform),
    logger: options.logger,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.runnerKind ? { runnerKind: options.runnerKind } : {}),
    ...(options.runner ? { runner: options.runner } : {}),
    ...(options.webhooks ? { webhooks: options.webhooks } : {}),
    ...(options.healthCheckTickMs ? { healthCheckTickMs: options.healthCheckTickMs } : {}),
    extend: (app, engine, limiter) => {
      const policy: OriginPolicy = { allowedHosts: defaultAllowedHosts(config.host, config.port, config.publicUrl), publicUrl: () => engine.core.publicUrl };
      hub = new LiveHub({
        pool,
        executor,
        drivers,
        baseUrls,
        logger: options.logger,
        onSignedIn: (linkId, accountId, state) => engine.live.completeSignIn(linkId, accountId, state),
        holdAccount: (accountId) => engine.core.runner.holdAccount(accountId),
        releaseAccount: (accountId) => engine.core.runner.releaseAccount(accountId),
        ...options.live,
      });
      const signIns = hub;
      // A lost lease took its sign-in holds with it: their pages (and live views) close here, so no second page opens elsewhere beside them.
      engine.core.runner.onHoldsLost((accountIds) => {
        signIns.closeSignIns(accountIds).catch((error: unknown) => options.logger.error({ err: error }, "could not close the sign-in pages of a lost lease"));
      });
      onUpgrade = mountLive(app, { engine, hub, logger: options.logger, limiter, policy });
      mcp = mountMcpHttp(app, engine, { ...policy, limiter, logger: options.logger });
      mountWebApp(app, { engine, limiter, policy, logger: options.logger });
      mountSmsUrl(app, engine);
      // The internal URL names this coordinator to the others (DESIGN §11): the same name labels its series.
      metrics = new ServiceMetrics({ engine, pool, coordinator: () => engine.core.internalUrl, logger: options.logger });
      mountMetrics(app, { engine, limiter, token: config.metricsToken, metrics });
      options.extend?.(app, engine, pool, executor);
    },
  });
  let http: Awaited<ReturnType<typeof listen>> | undefined;
  try {
    http = options.listen === false ? undefined : await listen(service.app, config.host, config.port, onUpgrade);
  } catch (error) {
    await service.close();
    await sandbox?.close();
    throw error;
  }
  let mail: MailListener | undefined;
  try {
    const { port, host, tls, allowPlaintext } = config.smtp;
    mail = port === undefined ? undefined : await startMailListener(service.engine, { host, port, tls, allowPlaintext, logger: options.logger, dkimResolver });
  } catch (error) {
    await http?.close();
    await service.close();
    await sandbox?.close();
    throw error;
  }
  // Playwright is loaded with the first browser. With accounts connected an action is near: loading
  // it now, once the service is up, spares that action the wait. With none, the first is a sign-in,
  // and a start that never runs one (a CLI's stdio mcp, a service being set up) never loads it.
  if (http) preloadBrowserIfConnected(service.store, options.logger);
  const url = http ? `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${http.port}` : undefined;
  // Port 0 means "any free port": links can only name the port once it is known.
  const chosen = (configured: string): string | undefined => (url && new URL(configured).port === "0" ? url : undefined);
  const urls = { publicUrl: chosen(config.publicUrl), internalUrl: chosen(config.internalUrl) };
  if (urls.publicUrl || urls.internalUrl) await service.engine.setUrls(urls);
  return {
    service,
    pool,
    executor,
    sandbox,
    hub: hub!,
    url,
    mail,
    async close() {
      await mail?.close();
      // Open MCP streams would hold the HTTP server open.
      await mcp?.close();
      await http?.close();
      await service.close();
      metrics?.close();
      await hub?.close();
      await sandbox?.close();
    },
  };
}

/** Loads Playwright ahead of the first action, when some account is connected (one count). */
function preloadBrowserIfConnected(store: Store, logger: Logger): void {
  store.accounts.countConnected().then(
    (connected) => {
      if (connected > 0) setImmediate(preloadBrowser);
    },
    (error: unknown) => logger.debug({ err: error }, "could not count connected accounts; Playwright loads with the first browser"),
  );
}
