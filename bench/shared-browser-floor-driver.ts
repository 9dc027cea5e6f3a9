/**
 * One process of (l′)'s raw floor (`shared-browser-floor.ts`): raw Playwright connected to the
 * shared browser server, a context per account signed in once, then on each "round" every account
 * posts `perAccount` times (its posts one after another, the accounts all at once), as a
 * coordinator's runs do. Commands and answers go over IPC.
 */
import { chromium, type BrowserContext } from "playwright";
import { rawPost, rawSignedIn } from "./support.js";

type Command = { kind: "start"; endpoint: string; sandboxUrl: string; handles: string[] } | { kind: "round"; perAccount: number; tag: string } | { kind: "stop" };

let contexts: BrowserContext[] = [];
let sandboxUrl = "";
let close: () => Promise<void> = async () => {};
let posts = 0;

process.on("message", async (command: Command) => {
  try {
    if (command.kind === "start") {
      const browser = await chromium.connect(command.endpoint, { timeout: 30_000 });
      close = () => browser.close();
      sandboxUrl = command.sandboxUrl;
      contexts = await Promise.all(command.handles.map((handle) => rawSignedIn(browser, sandboxUrl, handle)));
      // Warm, as the service's accounts are: a first post each opens the page kept between posts.
      await Promise.all(contexts.map((context) => rawPost(context, sandboxUrl, `floor warm-up ${process.pid} ${++posts}`)));
    } else if (command.kind === "round") {
      await Promise.all(contexts.map(async (context) => {
        for (let i = 0; i < command.perAccount; i++) await rawPost(context, sandboxUrl, `floor ${command.tag} ${process.pid} ${++posts}`);
      }));
    } else {
      await close();
      process.send!({ ok: true }, () => process.exit(0));
      return;
    }
    process.send!({ ok: true });
  } catch (error) {
    process.send!({ ok: false, error: error instanceof Error ? error.message : String(error) });
  }
});
