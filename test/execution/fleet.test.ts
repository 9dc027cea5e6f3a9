import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findChromium } from "../../src/browser/executable.js";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { CLI, freePort } from "../helpers/processes.js";

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterAll(() => {
  for (const child of children) killGroup(child);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The whole process group: the server and the Chromium it started. */
function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, "SIGKILL");
  } catch {
    // Already gone.
  }
}

/** `action-service browser-server` as its own process; resolves with the endpoint it prints last. */
function browserServer(): Promise<{ child: ChildProcess; endpoint: string }> {
  const child = spawn(process.execPath, [CLI, "browser-server", "--port", "0"], { stdio: ["ignore", "pipe", "pipe"], detached: true });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const last = output.trim().split("\n").at(-1)!;
      if (/^ws:\/\//.test(last)) resolve({ child, endpoint: last });
    });
    child.once("exit", (code) => reject(new Error(`browser-server exited ${code}: ${output}`)));
  });
}

async function connected(live: LiveService): Promise<string> {
  const account = await live.account(await live.user("none"));
  expect((await live.run(account, "connect")).status).toBe("succeeded");
  return account;
}

// The two run at once: each has its own browsers and service, and much of each is waiting on them.
describe.concurrent("a browser fleet", () => {
  it("spreads accounts over two browser servers; when one dies, the next actions succeed on the other", { timeout: 180_000 }, async () => {
    const [one, two] = await Promise.all([browserServer(), browserServer()]);
    const live = await startLiveService({ env: { BROWSER_WS_ENDPOINTS: `${one.endpoint},${two.endpoint}` } });
    try {
      const accounts = [];
      for (let i = 0; i < 4; i++) accounts.push(await connected(live));
      const placed = accounts.map((account) => live.server.pool.placementOf(account));
      expect(new Set(placed)).toEqual(new Set([one.endpoint, two.endpoint]));
      expect(placed.filter((endpoint) => endpoint === one.endpoint)).toHaveLength(2);

      killGroup(one.child);
      await live.until(() => live.server.pool.status().find((endpoint) => endpoint.url === one.endpoint)?.up === false, 10_000);
      for (const account of accounts) {
        const post = await live.run(account, "post", { text: `after a browser died ${account}` });
        expect(post.status).toBe("succeeded");
        expect(live.server.pool.placementOf(account)).toBe(two.endpoint);
      }
    } finally {
      await live.close();
    }
  });

  it("runs actions on a CDP endpoint (a Chromium started with --remote-debugging-port)", { timeout: 180_000 }, async () => {
    const port = await freePort();
    const profile = mkdtempSync(join(tmpdir(), "cdp-profile-"));
    dirs.push(profile);
    const chromium = spawn(
      findChromium(process.env.BROWSER_EXECUTABLE_PATH)!.path,
      ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", `--remote-debugging-port=${port}`, `--user-data-dir=${profile}`, "about:blank"],
      { stdio: "ignore", detached: true },
    );
    children.push(chromium);
    const deadline = Date.now() + 60_000;
    while (!(await fetch(`http://127.0.0.1:${port}/json/version`).then((response) => response.ok, () => false))) {
      if (Date.now() > deadline) throw new Error("Chromium's DevTools endpoint did not come up");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const live = await startLiveService({ env: { BROWSER_WS_ENDPOINTS: `cdp+http://127.0.0.1:${port}` } });
    try {
      const account = await connected(live);
      const post = await live.run(account, "post", { text: `over CDP ${account}` });
      expect(post.status).toBe("succeeded");
      expect(live.server.pool.placementOf(account)).toBe(`cdp+http://127.0.0.1:${port}`);
    } finally {
      await live.close();
    }
  });
});
