/** Where a browser comes from (DESIGN §8). */
export type EndpointSpec =
  | { kind: "local"; url: "local"; executablePath: string | undefined }
  /** A Playwright browser server: `chromium.connect(ws://…)`. */
  | { kind: "playwright"; url: string }
  /** A Chrome DevTools endpoint (browserless, Browserbase, Steel, Kernel, `--remote-debugging-port`): `connectOverCDP`. */
  | { kind: "cdp"; url: string };

/**
 * Reads `BROWSER_WS_ENDPOINTS` entries: `ws://…`/`wss://…` are Playwright browser servers,
 * `cdp+ws://…`, `cdp+wss://…`, `cdp+http://…`, `cdp+https://…` CDP endpoints. Throws on
 * anything else, naming it.
 */
export function parseEndpoint(entry: string): EndpointSpec {
  const url = entry.trim();
  if (/^wss?:\/\//i.test(url)) return { kind: "playwright", url };
  if (/^cdp\+(wss?|https?):\/\//i.test(url)) return { kind: "cdp", url };
  throw new Error(`"${url}" is not a browser endpoint: use ws://… (a Playwright browser server) or cdp+ws://…, cdp+http://… (a CDP endpoint)`);
}
