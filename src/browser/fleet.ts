import type { Browser } from "playwright";
import type { Logger } from "../engine/logger.js";
import type { EndpointSpec } from "./endpoint-spec.js";

/** Where the pool's browsers come from, and how a failed one is treated. */
export interface FleetOptions {
  executablePath?: string | undefined;
  /** Remote browsers (DESIGN §8); none: one Chromium started by this process. */
  endpoints?: readonly EndpointSpec[];
  logger: Logger;
  /** Seam for tests: how the browser of an endpoint is started. */
  launch?: (spec: EndpointSpec) => Promise<Browser>;
  /** An endpoint that failed is tried again after this long (default 5 s). */
  retryAfterMs?: number;
}

/** One browser of the fleet: started or reached on first use, and how many contexts it holds. */
export interface Endpoint {
  spec: EndpointSpec;
  browser: Promise<Browser> | undefined;
  /** Until when this endpoint is not offered new contexts (it failed to connect or died). */
  downUntil: number;
  contexts: number;
}

/** An endpoint as the status shows it: whether it is up, and how many contexts it holds. */
export interface EndpointStatus {
  url: string;
  kind: EndpointSpec["kind"];
  up: boolean;
  contexts: number;
}

/**
 * The endpoints behind the pool (DESIGN §8): each browser connected on first use, one that fails
 * or dies set aside for `retryAfterMs`, the healthy and least loaded offered first.
 */
export class BrowserFleet {
  readonly #endpoints: Endpoint[];

  /** `lost` hears of an endpoint whose browser went away, before its count of contexts is reset. */
  constructor(
    private readonly options: FleetOptions,
    private readonly lost: (endpoint: Endpoint) => void,
  ) {
    const specs: readonly EndpointSpec[] = options.endpoints?.length ? options.endpoints : [{ kind: "local", url: "local", executablePath: options.executablePath }];
    this.#endpoints = specs.map((spec) => ({ spec, browser: undefined, downUntil: 0, contexts: 0 }));
  }

  /** The first endpoint's browser (the only one without a fleet), started on first use. */
  browser(): Promise<Browser> {
    return this.connect(this.#endpoints[0]!);
  }

  connect(endpoint: Endpoint): Promise<Browser> {
    endpoint.browser ??= (this.options.launch ?? launchOrConnect)(endpoint.spec).then(
      (browser) => {
        endpoint.downUntil = 0;
        browser.on("disconnected", () => this.#lost(endpoint, browser));
        return browser;
      },
      (error: unknown) => {
        endpoint.browser = undefined;
        endpoint.downUntil = Date.now() + (this.options.retryAfterMs ?? 5_000);
        this.options.logger.error({ err: error, endpoint: endpointName(endpoint.spec) }, "browser could not be started or reached");
        throw error;
      },
    );
    return endpoint.browser;
  }

  /** A browser went away: its contexts are gone; the next acquire connects again or goes elsewhere. */
  #lost(endpoint: Endpoint, browser: Browser): void {
    this.options.logger.warn({ endpoint: endpointName(endpoint.spec) }, "browser disconnected; its accounts move to the next healthy browser");
    void endpoint.browser?.then((current) => {
      if (current === browser) endpoint.browser = undefined;
    });
    endpoint.downUntil = this.#endpoints.length > 1 ? Date.now() + (this.options.retryAfterMs ?? 5_000) : 0;
    this.lost(endpoint);
    endpoint.contexts = 0;
  }

  /** Healthy endpoints first, the least loaded first; the ones that are down last (in case all are). */
  candidates(): Endpoint[] {
    const now = Date.now();
    return [...this.#endpoints].sort((a, b) => Number(a.downUntil > now) - Number(b.downUntil > now) || a.contexts - b.contexts);
  }

  /** Each endpoint, whether it is up, and how many contexts it holds. */
  status(): EndpointStatus[] {
    const now = Date.now();
    return this.#endpoints.map((endpoint) => ({ url: endpoint.spec.url, kind: endpoint.spec.kind, up: endpoint.downUntil <= now, contexts: endpoint.contexts }));
  }

  async close(): Promise<void> {
    for (const endpoint of this.#endpoints) {
      const browser = await endpoint.browser?.catch(() => undefined);
      endpoint.browser = undefined;
      // A remote browser is someone else's: only the connection is closed.
      await browser?.close().catch(() => undefined);
    }
  }
}

/** Playwright is loaded with the first browser, not at start-up (it is half of a start's module loading). */
async function launchOrConnect(spec: EndpointSpec): Promise<Browser> {
  const { connectEndpoint } = await import("./endpoints.js");
  return connectEndpoint(spec);
}

/** Loads what the first browser needs ahead of it, once the service is up. */
export function preloadBrowser(): void {
  void import("./endpoints.js").catch(() => undefined);
}

/** An endpoint for logs and metrics: its URL without credentials or query (a token may sit there). */
export function endpointName(spec: EndpointSpec): string {
  if (spec.kind === "local") return "local";
  try {
    const url = new URL(spec.url.replace(/^cdp\+/i, ""));
    return `${spec.kind}:${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return spec.kind;
  }
}
