import type { Hono } from "hono";
import type { BrowserExecutor } from "./browser/executor.js";
import type { BrowserPool } from "./browser/pool.js";
import type { Config } from "./config.js";
import type { Engine } from "./engine/engine.js";
import type { Logger } from "./engine/logger.js";
import { defaultAllowedHosts, mountMcpHttp } from "./mcp/http.js";

/** Mounts MCP over HTTP (/mcp) and the live browser (/live) on the service's HTTP app. */
export function mountSurfaces(config: Config, logger: Logger) {
  return (app: Hono, engine: Engine, _pool: BrowserPool, _executor: BrowserExecutor): void => {
    mountMcpHttp(app, engine, { allowedHosts: defaultAllowedHosts(config.host, config.port, config.publicUrl), logger });
  };
}
