import { hostname } from "node:os";
import { chromium } from "playwright";
import { CHROMIUM_ARGS, findChromium } from "../browser/executable.js";
import type { Config } from "../config.js";

/**
 * `action-service browser-server [--port N] [--host H]`: a Playwright browser server on this
 * machine's Chromium, for `BROWSER_WS_ENDPOINTS` on a coordinator. Its `ws://` endpoint is
 * printed alone on the last line of stdout; it runs until stopped.
 */
export async function runBrowserServer(config: Config, options: { port: number; host: string }): Promise<{ close(): Promise<void> }> {
  const found = findChromium(config.browserExecutablePath);
  if (!found) throw new Error(config.browserExecutablePath ? `No Chromium at ${config.browserExecutablePath}.` : "No Chromium found: set BROWSER_EXECUTABLE_PATH or run `npm run setup`.");
  const server = await chromium.launchServer({ executablePath: found.path, args: CHROMIUM_ARGS, port: options.port, host: options.host });
  const endpoint = server.wsEndpoint();
  console.log(`Playwright browser server on ${found.path} (${found.source}); add it to BROWSER_WS_ENDPOINTS on the coordinator:`);
  // Listening on every interface: name this machine, as the coordinator will reach it.
  console.log(options.host === "0.0.0.0" || options.host === "::" ? endpoint.replace(/^ws:\/\/[^/]+:/, `ws://${hostname()}:`) : endpoint);
  return { close: () => server.close() };
}
