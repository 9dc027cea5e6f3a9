import { createServer, request as forward, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, it } from "vitest";
import { DEFAULT_SETTLE_MS } from "../../src/browser/settle.js";
import { startLiveService, type LiveService } from "../helpers/live-service.js";

// DESIGN §3, "slow is not broken": the sandbox behind a proxy that holds each page (every document
// the browser navigates to) before passing it on, as a slow platform would. A page may take
// ACTION_SERVICE_PAGE_TIMEOUT_SECONDS to arrive; a page held longer is the platform not answering.
const PAGE_TIMEOUT_SECONDS = 15;
/**
 * Slower than every fixed wait on a page's way, yet 4 s inside the page timeout: Playwright's own
 * waits (a `goto`, a click's navigation) last the page timeout, and the longest fixed wait is the
 * 10 s a loaded page has to show a state (DEFAULT_SETTLE_MS; a round trip's 5 s is the next).
 */
const SLOW_PAGE_MS = DEFAULT_SETTLE_MS + 1_000;

/** A proxy in front of the sandbox that holds each page (a document answered 200, not a redirect) `holdMs` before passing it on. */
class HoldingProxy {
  target = "";
  holdMs = 0;
  /** Pages held so far. */
  held = 0;
  readonly #server: Server = createServer((incoming, outgoing) => {
    const document = incoming.headers["sec-fetch-dest"] === "document";
    const upstream = forward(new URL(incoming.url ?? "/", this.target), { method: incoming.method, headers: incoming.headers }, (answer) => {
      const pass = (): void => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      };
      if (!document || answer.statusCode !== 200 || this.holdMs === 0) return pass();
      this.held++;
      const timer = setTimeout(pass, this.holdMs);
      outgoing.on("close", () => clearTimeout(timer));
    });
    upstream.on("error", () => outgoing.destroy());
    incoming.pipe(upstream);
  });

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

/** A service whose platform is the sandbox behind its own holding proxy. */
interface HeldPlatform {
  live: LiveService;
  proxy: HoldingProxy;
}

async function heldPlatform(): Promise<HeldPlatform> {
  const proxy = new HoldingProxy();
  const url = await proxy.listen();
  const live = await startLiveService({ env: { SANDBOX_URL: url, ACTION_SERVICE_PAGE_TIMEOUT_SECONDS: String(PAGE_TIMEOUT_SECONDS) } });
  proxy.target = live.sandbox.url;
  return { live, proxy };
}

// One service (and proxy) a test, so that the two run at once: each test's waits are the platform's.
let slow: HeldPlatform;
let silent: HeldPlatform;

beforeAll(async () => {
  [slow, silent] = await Promise.all([heldPlatform(), heldPlatform()]);
});

afterAll(async () => {
  for (const { live, proxy } of [slow, silent]) {
    await live?.close();
    await proxy?.close();
  }
});

const balance = async (live: LiveService): Promise<number> => (await live.api("GET", "/v1/credits")).json.balance;

describe.concurrent("a slow platform", () => {
  it("holding each page longer than any fixed wait of the driver: connect and a post succeed, charged as usual", async ({ expect }) => {
    const { live, proxy } = slow;
    const [connecting, posting] = [await live.user("none"), await live.user("none")];
    const [toConnect, toPost] = [await live.account(connecting), await live.account(posting)];
    // The account that posts is connected before the platform slows down; then both go at once.
    expect((await live.run(toPost, "connect")).status).toBe("succeeded");
    proxy.holdMs = SLOW_PAGE_MS;
    const before = proxy.held;
    const [connected, posted] = await Promise.all([
      (async () => live.finished((await live.api("POST", "/v1/actions", { account_id: toConnect, type: "connect" })).json.id, 240_000))(),
      (async () => live.finished((await live.api("POST", "/v1/actions", { account_id: toPost, type: "post", params: { text: `Slow but sure ${posting}` } })).json.id, 240_000))(),
    ]);
    expect(connected, JSON.stringify(connected.error)).toMatchObject({ status: "succeeded", result: { signed_in: true } });
    expect(posted, JSON.stringify(posted.error)).toMatchObject({ status: "succeeded" });
    expect(posted.cost).toBeGreaterThan(0);
    // Every page of both went through the hold.
    expect(proxy.held - before).toBeGreaterThanOrEqual(4);
    expect(await live.sandboxApi("GET", `/_sandbox/posts?author=${posting}`)).toHaveLength(1);
  }, 600_000);

  it("holding a page longer than the page timeout: browser_error naming the seconds, not ui_changed, and nothing charged", async ({ expect }) => {
    const { live, proxy } = silent;
    proxy.holdMs = 0;
    const handle = await live.user("none");
    const accountId = await live.account(handle);
    expect((await live.run(accountId, "connect")).status).toBe("succeeded");
    const balanceBefore = await balance(live);
    proxy.holdMs = (PAGE_TIMEOUT_SECONDS + 30) * 1000;
    const created = await live.api("POST", "/v1/actions", { account_id: accountId, type: "post", params: { text: `Never sent ${handle}` } });
    const failed = await live.finished(created.json.id, 120_000);
    proxy.holdMs = 0;
    expect(failed).toMatchObject({ status: "failed", error: { code: "browser_error" }, cost: 0 });
    expect(failed.error.message).toContain(`did not answer within ${PAGE_TIMEOUT_SECONDS} s`);
    expect(failed.error.message).toContain("nothing was done there");
    expect(await balance(live)).toBe(balanceBefore);
    expect(await live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`)).toEqual([]);
  }, 300_000);
});
