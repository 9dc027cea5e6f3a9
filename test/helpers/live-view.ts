import { chromium } from "playwright";
import { WebSocket } from "ws";
import { CHROMIUM_ARGS, findChromium } from "../../src/browser/executable.js";

/** A message the live view sends: a frame of the page, or the action's state. */
export type LiveMessage = { type: "frame"; data: string; width: number; height: number } | { type: "state"; [key: string]: unknown };

/** The live view's WebSocket (`/live/{token}/ws`), as the live page opens it from the link's origin. */
export interface LiveView {
  /** The next message of `type` (already received or still to come). */
  next<T extends LiveMessage["type"]>(type: T, timeoutMs?: number): Promise<Extract<LiveMessage, { type: T }>>;
  send(input: { type: "click"; x: number; y: number } | { type: "text"; text: string } | { type: "key"; key: string }): void;
  close(): void;
}

/** `headers`: more the browser sends (a cookie of the site, say). */
export async function openLiveView(signInUrl: string, headers: Record<string, string> = {}): Promise<LiveView> {
  const url = new URL(signInUrl);
  const socket = new WebSocket(`${signInUrl.replace(/^http/, "ws")}/ws?w=1280&h=800`, { origin: url.origin, headers });
  const received: LiveMessage[] = [];
  const waiting: (() => void)[] = [];
  socket.on("message", (data) => {
    received.push(JSON.parse(String(data)) as LiveMessage);
    for (const wake of waiting.splice(0)) wake();
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
    socket.once("unexpected-response", (_request, response) => reject(new Error(`the live view answered ${response.statusCode}`)));
  });
  return {
    async next<T extends LiveMessage["type"]>(type: T, timeoutMs = 20_000): Promise<Extract<LiveMessage, { type: T }>> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const index = received.findIndex((message) => message.type === type);
        if (index >= 0) return received.splice(index, 1)[0] as Extract<LiveMessage, { type: T }>;
        if (socket.readyState !== socket.OPEN) throw new Error(`the live view closed before a ${type} message`);
        if (Date.now() > deadline) throw new Error(`no ${type} message within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
          setTimeout(resolve, 200);
        });
      }
    },
    send(input) {
      socket.send(JSON.stringify(input));
    },
    close() {
      socket.close();
    },
  };
}

/**
 * Where the sandbox's code page puts its code field and its Verify button, in page CSS pixels at
 * `viewport`: read off the same page, opened here for `handle` (another e-mail-code user).
 */
export async function codePageLayout(sandboxUrl: string, handle: string, viewport: { width: number; height: number }): Promise<{ code: { x: number; y: number }; verify: { x: number; y: number } }> {
  const browser = await chromium.launch({ executablePath: findChromium(process.env.BROWSER_EXECUTABLE_PATH)?.path, args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage({ viewport });
    await page.goto(`${sandboxUrl}/login`);
    await page.locator('input[autocomplete="username"]').fill(handle);
    await page.locator('input[type="password"]').fill("sandbox-password");
    await page.locator('button[type="submit"]').click();
    const code = page.locator("#code");
    await code.waitFor();
    const centre = async (box: { x: number; y: number; width: number; height: number } | null): Promise<{ x: number; y: number }> => ({ x: box!.x + box!.width / 2, y: box!.y + box!.height / 2 });
    return { code: await centre(await code.boundingBox()), verify: await centre(await page.locator('form:has(#code) button[type="submit"]').boundingBox()) };
  } finally {
    await browser.close();
  }
}
