import type { Config } from "../config.js";
import { createLogger } from "../engine/logger.js";
import { runStdioServer } from "../mcp/stdio.js";
import { startServer } from "../server.js";

/**
 * `action-service mcp`: MCP over stdio for the local owner (no key). stdout carries only
 * JSON-RPC; logs go to stderr. Live-browser links are still served on 127.0.0.1.
 */
export async function runMcp(config: Config): Promise<void> {
  const logger = createLogger(config.logLevel === "info" ? "warn" : config.logLevel);
  const local = { ...config, host: "127.0.0.1" };
  const server = await startServer(local, { logger, runnerKind: "mcp" }).catch(async (error: unknown) => {
    if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE") throw error;
    // Typically `serve` holds the port: links are served on a free port instead, and name it.
    logger.warn(`port ${config.port} is in use: live-browser links are served on a free port instead`);
    return startServer({ ...local, port: 0, publicUrl: "http://127.0.0.1:0", internalUrl: "http://127.0.0.1:0" }, { logger, runnerKind: "mcp" });
  });
  const engine = server.service.engine;
  const stdio = await runStdioServer({ engine, principal: await engine.keys.ownerPrincipal(), logger });
  await stdio.closed;
  await server.close();
}
