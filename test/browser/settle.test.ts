import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, Page } from "playwright";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PageLoad } from "../../src/browser/page-load.js";
import { judgeTimeout, settle, type PageRule } from "../../src/browser/settle.js";
import { ActionFailure, PlatformTimeout } from "../../src/domain/errors.js";
import type { FailureDetector } from "../../src/platforms/driver.js";
import { launchChromium } from "../sandbox/support.js";

/** Pages by path; "/streamed" sends its heading 300 ms after the rest, as a slow server would. */
const PAGES: Record<string, string> = {
  "/feed": "<h1>Feed</h1>",
  "/signed-out": "<h1>Sign in</h1>",
  "/slow-down": "<h1>Feed</h1><h2>Slow down</h2>",
  "/hidden-warning": "<h1>Feed</h1><h2 hidden>Slow down</h2><p class=\"gone\" style=\"display: none\">Gone</p>",
  "/blank": "<p>Nothing here</p>",
  // Parsed at once; its app draws the page once everything has loaded, and a part of it comes 1.5 s late.
  "/app": "<p>Loading</p><img src=\"/silent/1500/part\"><script>addEventListener('load', () => document.body.insertAdjacentHTML('beforeend', '<h1>Feed</h1>'))</script>",
  // Its parts come one after another, each 600 ms after the last asked: 3.6 s in all, the platform heard from all along.
  "/chained":
    "<p>Loading</p><script>let part = 0; const next = () => { if (++part > 6) return; const image = document.body.appendChild(new Image()); image.onload = image.onerror = next; image.src = '/silent/600/part' + part; }; next();" +
    "addEventListener('load', () => document.body.insertAdjacentHTML('beforeend', '<h1>Feed</h1>'))</script>",
  // Loaded, then its script goes on (after 1 s) to a page that comes 1.5 s after it is asked for.
  "/redirecting": "<p>Loading</p><script>setTimeout(() => { location.href = '/silent/1500/feed'; }, 1000)</script>",
};

const DETECTORS: FailureDetector[] = [
  { code: "rate_limited", locate: (page) => page.getByRole("heading", { name: "Slow down" }), message: "Slow down." },
  { code: "account_blocked", locate: (page) => page.getByRole("heading", { name: "Restricted" }), message: "Restricted." },
  // A detector by CSS matches hidden elements too (a role never does).
  { code: "not_found", locate: (page) => page.locator(".gone"), message: "Gone." },
];

let server: Server;
let base: string;
let browser: Browser;
let page: Page;

const states = (p: Page) => ({ signedIn: p.getByRole("heading", { name: "Feed" }), signedOut: p.getByRole("heading", { name: "Sign in" }) });

beforeAll(async () => {
  server = createServer((request, response) => {
    response.setHeader("content-type", "text/html");
    // /held/<ms>/<path>: the page begins at once and ends after <ms>; /silent/<ms>/<path>: nothing at all until then.
    const slow = /^\/(held|silent)\/(\d+)(\/.*)$/.exec(request.url ?? "");
    if (slow) {
      if (slow[1] === "held") response.write("<!doctype html><title>t</title><p>Loading");
      const rest = `${slow[1] === "silent" ? "<!doctype html><title>t</title>" : ""}${PAGES[slow[3]!] ?? ""}<form method="post" action="/silent/60000/feed"><button>Send</button></form>`;
      const timer = setTimeout(() => response.end(rest), Number(slow[2]));
      response.on("close", () => clearTimeout(timer));
      return;
    }
    if (request.url === "/streamed") {
      response.write("<!doctype html><title>t</title><p>Loading</p>");
      setTimeout(() => response.end("<h1>Feed</h1>"), 300);
      return;
    }
    response.end(`<!doctype html><title>t</title>${PAGES[request.url ?? ""] ?? ""}`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchChromium();
  page = await browser.newPage();
  // As the executor does for every page it takes: its arrival is followed from the first navigation.
  PageLoad.of(page);
});

afterAll(async () => {
  await browser.close();
  await new Promise((resolve) => server.close(resolve));
});

const RULE: PageRule = { pageTimeoutMs: 30_000, platformTitle: "Test" };

async function settleAt(path: string, timeoutMs?: number, rule: PageRule = RULE): Promise<string> {
  await page.goto(base + path, { waitUntil: "commit" });
  return settle(page, states(page), DETECTORS, rule, timeoutMs);
}

describe("settle", () => {
  it("names the expected state the page shows, the second as well as the first", async () => {
    expect(await settleAt("/feed")).toBe("signedIn");
    expect(await settleAt("/signed-out")).toBe("signedOut");
  });

  it("fails with the detector's code when a failure shows beside an expected state", async () => {
    const failure = await settleAt("/slow-down").catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ActionFailure);
    expect((failure as ActionFailure).code).toBe("rate_limited");
  });

  it("is not fooled by a failure state that is on the page but hidden", async () => {
    expect(await settleAt("/hidden-warning")).toBe("signedIn");
  });

  it("finds a state that arrives after the page began to load", async () => {
    expect(await settleAt("/streamed")).toBe("signedIn");
  });

  it("calls a page that shows nothing it knows ui_changed once the time is up", async () => {
    const started = Date.now();
    const failure = await settleAt("/blank", 500).catch((error: unknown) => error);
    expect((failure as ActionFailure).code).toBe("ui_changed");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("judges a page only once it has loaded: a platform slower than the settle time is waited for, not called ui_changed", async () => {
    // The settle time (300 ms) is counted from the page's load; the page took 1.5 s to arrive…
    expect(await settleAt("/held/1500/feed", 300)).toBe("signedIn");
    // …or was parsed at once and loaded 1.5 s later, when its app drew it.
    expect(await settleAt("/app", 300)).toBe("signedIn");
  });

  it("a page still arriving past the page timeout is the platform not answering, with the seconds in the message, never ui_changed", async () => {
    const failure = await settleAt("/held/60000/feed", 300, { pageTimeoutMs: 1_000, platformTitle: "Test" }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(PlatformTimeout);
    expect((failure as ActionFailure).code).toBe("browser_error");
    expect((failure as ActionFailure).message).toMatch(/^The Test platform did not answer within 1 s: http:\/\/127\.0\.0\.1:\d+\/held\/60000\/feed had not loaded\.$/);
  });

  it("counts the page timeout from the last time the platform was heard from: a page whose parts keep coming is slow, not silent", async () => {
    const started = performance.now();
    // A page timeout of 2 s leaves each 600 ms part 1.4 s of slack on a loaded machine.
    expect(await settleAt("/chained", 300, { pageTimeoutMs: 2_000, platformTitle: "Test" })).toBe("signedIn");
    // Longer in all than the page timeout: the platform answered every 600 ms.
    expect(performance.now() - started).toBeGreaterThan(3_000);
  });

  it("judges a page as it is now after this process was not run for a while, not as the timer that woke it last saw it", async () => {
    await page.goto(`${base}/redirecting`, { waitUntil: "commit" });
    // Its page timeout runs from the moment the page goes on (1 s), the next page coming 1.5 s later…
    const judged = settle(page, states(page), DETECTORS, { pageTimeoutMs: 2_000, platformTitle: "Test" }).catch((error: unknown) => error);
    await page.waitForRequest(/\/silent\/1500\/feed$/);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // …while this process is stalled for 2.5 s (a starved machine, a blocked event loop): the page
    // arrives meanwhile. Stalled in the loop's check phase, as after any I/O callback: on waking the
    // loop runs its due timers (the settle's) before it reads the browser's events that say so.
    await new Promise((resolve) => setImmediate(resolve));
    const stalledUntil = performance.now() + 2_500;
    while (performance.now() < stalledUntil);
    expect(await judged).toBe("signedIn");
  });

  it("a click whose page never comes is judged by the same rule: the platform did not answer; on a loaded page, ui_changed", async () => {
    await page.goto(`${base}/silent/0/feed`);
    const clicked = await page
      .getByRole("button", { name: "Send" })
      .click({ timeout: 1_000 })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect((clicked as Error).name).toBe("TimeoutError");
    const judged = judgeTimeout(page, { pageTimeoutMs: 1_000, platformTitle: "Test" });
    expect(judged).toBeInstanceOf(PlatformTimeout);
    expect(judged.message).toContain("did not answer within 1 s");
    await page.goto(`${base}/feed`);
    expect(judgeTimeout(page, RULE).code).toBe("ui_changed");
  });
});
