import { chromium, type Browser, type BrowserContext, type Page } from "playwright";
import { CHROMIUM_ARGS, findChromium } from "../src/browser/executable.js";
import { ProcessTree } from "./peer-tree.js";

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function launchRaw(): Promise<Browser> {
  return chromium.launch({ executablePath: findChromium(process.env.BROWSER_EXECUTABLE_PATH)?.path, args: CHROMIUM_ARGS });
}

/** Signs a raw context in as a sandbox user with no challenge, as a hand-written script would. */
export async function rawSignedIn(browser: Browser, sandboxUrl: string, handle: string): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(`${sandboxUrl}/feed`);
  await page.getByLabel("Username").fill(handle);
  await page.getByLabel("Password").fill("sandbox-password");
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: "Feed", exact: true }).waitFor();
  await page.close();
  return context;
}

/** The page each raw context keeps between posts, as the service keeps one per warm account. */
const rawPages = new WeakMap<BrowserContext, Page>();

/** The raw script's post: the same steps the sandbox driver takes, in the context's one page. */
export async function rawPost(context: BrowserContext, sandboxUrl: string, text: string): Promise<void> {
  const page = rawPages.get(context) ?? (await context.newPage());
  rawPages.set(context, page);
  await page.goto(`${sandboxUrl}/feed`);
  await page.getByRole("heading", { level: 1, name: "Feed", exact: true }).waitFor();
  await page.getByLabel("What's on your mind?").fill(text);
  await page.getByRole("button", { name: "Post", exact: true }).click();
  await page.getByRole("status").filter({ hasText: "Your post is live." }).waitFor();
  await context.storageState();
}

/** Proportional set size (MB) of the Chromium processes this process started: shared pages counted once. */
export function chromiumPssMb(): number {
  return new ProcessTree(process.pid).pssMb({ root: false });
}
