import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, Page } from "playwright";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { settle } from "../../src/browser/settle.js";
import { ActionFailure } from "../../src/domain/errors.js";
import type { FailureDetector } from "../../src/platforms/driver.js";
import { launchChromium } from "../sandbox/support.js";

/** Pages by path; "/streamed" sends its heading 300 ms after the rest, as a slow server would. */
const PAGES: Record<string, string> = {
  "/feed": "<h1>Feed</h1>",
  "/signed-out": "<h1>Sign in</h1>",
  "/slow-down": "<h1>Feed</h1><h2>Slow down</h2>",
  "/hidden-warning": "<h1>Feed</h1><h2 hidden>Slow down</h2><p class=\"gone\" style=\"display: none\">Gone</p>",
  "/blank": "<p>Nothing here</p>",
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
});

afterAll(async () => {
  await browser.close();
  await new Promise((resolve) => server.close(resolve));
});

async function settleAt(path: string, timeoutMs?: number): Promise<string> {
  await page.goto(base + path, { waitUntil: "commit" });
  return settle(page, states(page), DETECTORS, timeoutMs);
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
});
