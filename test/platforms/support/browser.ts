import { chromium, type Browser, type BrowserContext } from "playwright";
import { CHROMIUM_ARGS, findChromium } from "../../../src/browser/executable.js";

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Chromium found as the service finds it (BROWSER_EXECUTABLE_PATH, Playwright's download, a system Chromium). */
export function launchChromium(): Promise<Browser> {
  const executablePath = findChromium(process.env.BROWSER_EXECUTABLE_PATH)?.path;
  return chromium.launch({ ...(executablePath ? { executablePath } : {}), args: CHROMIUM_ARGS });
}

/**
 * Aborts every request that leaves the machine. Ghost's admin and MediaWiki's pages ask for fonts,
 * CDNs and ghost.org; on a closed network those requests hang until they time out and hold the
 * page's load event with them.
 */
export async function blockNonLoopback(context: BrowserContext): Promise<void> {
  await context.route("**/*", (route) => {
    const url = new URL(route.request().url());
    const local = url.protocol === "data:" || url.protocol === "blob:" || LOOPBACK_HOSTS.has(url.hostname);
    return local ? route.continue() : route.abort("blockedbyclient");
  });
}

/** A new context with non-loopback requests blocked. */
export async function loopbackContext(browser: Browser): Promise<BrowserContext> {
  const context = await browser.newContext();
  await blockNonLoopback(context);
  return context;
}
