import { AxeBuilder } from "@axe-core/playwright";
import { mkdirSync } from "node:fs";
import { chromium, type Browser, type BrowserContextOptions, type Locator, type Page } from "playwright";
import { afterAll, beforeAll } from "vitest";
import { CHROMIUM_ARGS, findChromium } from "../../src/browser/executable.js";
import { startLiveService, type LiveService, type LiveServiceOptions } from "./live-service.js";

/** The devices the web app's tests look at it on. */
export const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 860 } };
export const PHONE: BrowserContextOptions = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };

/**
 * For one test file of the web app: a live service (started with `options`, or with what
 * `options()` makes when they need what the file reads first) and a person's Chromium, started
 * before the file's tests and closed after them, and `test-artifacts/` for their screenshots.
 * `timeouts`: how long starting and stopping may take (a file that starts more, e.g. a devnet).
 */
export function webAppFixture(
  options: LiveServiceOptions | (() => Promise<LiveServiceOptions>) = {},
  timeouts: { startMs?: number; stopMs?: number } = {},
): { readonly live: LiveService; readonly person: Browser } {
  let live: LiveService | undefined;
  let person: Browser | undefined;
  beforeAll(async () => {
    live = await startLiveService(typeof options === "function" ? await options() : options);
    person = await chromium.launch({ executablePath: findChromium(process.env.BROWSER_EXECUTABLE_PATH)?.path, args: CHROMIUM_ARGS });
    mkdirSync("test-artifacts", { recursive: true });
  }, timeouts.startMs ?? 60_000);
  afterAll(async () => {
    await person?.close();
    await live?.close();
  }, timeouts.stopMs);
  return {
    get live() {
      if (!live) throw new Error("the live service is started before the file's tests: read it inside one");
      return live;
    },
    get person() {
      if (!person) throw new Error("the person's Chromium is started before the file's tests: read it inside one");
      return person;
    },
  };
}

/**
 * A page of the web app at `baseUrl`, signed in with `key` through the sign-in form as a person
 * would, in a context of its own on `device`. `clipboard`: the context may read and write the
 * clipboard (as a person's browser asks to).
 */
export async function signedInPage(browser: Browser, baseUrl: string, key: string, options: { device?: BrowserContextOptions; clipboard?: boolean } = {}): Promise<Page> {
  const context = await browser.newContext(options.device ?? DESKTOP);
  if (options.clipboard) await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: baseUrl });
  const page = await context.newPage();
  await page.goto(`${baseUrl}/app`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(/\/app\/actions$/);
  return page;
}

/**
 * Every serious or critical accessibility violation on the page (axe-core). The app's pages have
 * no frames, so axe runs in the page itself (`axe.run`, its "legacy" mode): its frame-by-frame
 * run would finish in a blank page opened for each scan, twice the scan's time for the same result.
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  if (page.frames().length !== 1) throw new Error(`${page.url()} has frames: scan it frame by frame (leave out setLegacyMode)`);
  const results = await new AxeBuilder({ page }).setLegacyMode(true).analyze();
  return results.violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(" ")).join(", ")}`);
}

/** Clicks, through the live view open in `view`, where `target` (an element of the account's own page) is. */
export async function clickThrough(view: Page, accountPage: Page, target: Locator): Promise<void> {
  const box = await target.boundingBox();
  if (box === null) throw new Error("the element to click through the live view is not shown on the account's page");
  const viewport = accountPage.viewportSize()!;
  const screen = view.locator("#screen");
  await screen.waitFor({ state: "visible" });
  const shown = (await screen.boundingBox())!;
  await screen.click({ position: { x: ((box.x + box.width / 2) / viewport.width) * shown.width, y: ((box.y + box.height / 2) / viewport.height) * shown.height } });
}
