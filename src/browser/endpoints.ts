import { chromium, type Browser } from "playwright";
import type { EndpointSpec } from "./endpoint-spec.js";
import { CHROMIUM_ARGS, findChromium } from "./executable.js";

export { parseEndpoint, type EndpointSpec } from "./endpoint-spec.js";

/** Connects to (or starts) the browser behind an endpoint. */
export function connectEndpoint(spec: EndpointSpec): Promise<Browser> {
  switch (spec.kind) {
    case "local": {
      const found = findChromium(spec.executablePath);
      if (!found) return Promise.reject(new Error(spec.executablePath ? `no Chromium at ${spec.executablePath}` : "no Chromium found (BROWSER_EXECUTABLE_PATH, Playwright's download, or a system Chromium)"));
      return chromium.launch({ executablePath: found.path, args: CHROMIUM_ARGS });
    }
    case "playwright":
      return chromium.connect(spec.url, { timeout: 15_000 });
    case "cdp":
      return chromium.connectOverCDP(spec.url.replace(/^cdp\+/i, ""), { timeout: 15_000 });
  }
}
