/**
 * Benchmarks of execution across processes and machines (DESIGN §11):
 * (e) throughput of 16 accounts while 200 others wait at needs_input, ÷ the same with nothing
 *     waiting, and MB (PSS) per paused page;
 *     and its floor: the same ratio for raw Playwright pages, 16 busy beside as many idle ones;
 * (f) actions/s on 2 browser servers ÷ on 1 local browser, and the coordinator's CPU per action.
 */
import { createServer } from "node:http";
import { chromium, type Page } from "playwright";
import { CHROMIUM_ARGS, findChromium } from "../src/browser/executable.js";
import { startLiveService, type LiveService } from "../test/helpers/live-service.js";
import { startBrowserServer } from "./fleet.js";
import { chromiumPssMb } from "./support.js";

let serial = 0;
const unique = (label: string): string => `${label} ${Date.now()}-${++serial}`;

export async function user(live: LiveService, challenge = "none"): Promise<string> {
  const handle = `x${Date.now().toString(36)}${++serial}`;
  await live.sandboxApi("POST", "/_sandbox/users", { handle, name: `Bench ${serial}`, password: "sandbox-password", challenge });
  return handle;
}

/** Accounts connected (signed in, context warm) and ready to post. */
export async function connectedAccounts(live: LiveService, count: number): Promise<string[]> {
  const ids = await Promise.all(Array.from({ length: count }, async () => live.account(await user(live))));
  const connected = await Promise.all(ids.map((id) => live.run(id, "connect")));
  if (connected.some((action) => action.status !== "succeeded")) throw new Error("connect failed");
  return ids;
}

/** Posts `perAccount` times on every account at once; actions per second. */
export async function postRate(live: LiveService, ids: readonly string[], perAccount = 2): Promise<number> {
  const start = performance.now();
  await Promise.all(
    ids.map(async (id) => {
      for (let i = 0; i < perAccount; i++) {
        const response = await live.api("POST", "/v1/actions?wait=30", { account_id: id, type: "post", params: { text: unique("rate") } });
        const action = response.json.status === "succeeded" ? response.json : await live.wait(response.json.id);
        if (action.status !== "succeeded") throw new Error(`post ${action.status}: ${JSON.stringify(action.error)}`);
      }
    }),
  );
  return (ids.length * perAccount) / ((performance.now() - start) / 1000);
}

const SERVICE_ENV = { ACTION_SERVICE_MAX_CONCURRENT_ACTIONS: "16", ACTION_SERVICE_FREE_CREDITS: "1000000", ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "1000000" };

export async function pausedLoad(paused = Number(process.env.BENCH_PAUSED ?? 200)): Promise<{ paused: number; ratio: number; quiet: number; busy: number; mbPerPausedPage: number }> {
  const live = await startLiveService({ env: { ...SERVICE_ENV, ACTION_SERVICE_MAX_PAUSED_ACTIONS: String(paused) } });
  try {
    const workers = await connectedAccounts(live, 16);
    await postRate(live, workers, 1); // warm-up
    const quietBefore = await postRate(live, workers);
    const before = chromiumPssMb();
    const waiting = await Promise.all(
      Array.from({ length: paused }, async () => {
        const account = await live.account(await user(live, "email"));
        return (await live.api("POST", "/v1/actions", { account_id: account, type: "connect", params: {} })).json.id as string;
      }),
    );
    // Every one of them signs in until its emailed-code page; count those that got there.
    const progress = setInterval(() => console.log(`(e) paused so far: ${live.server.service.engine.core.runner.pausedCount} of ${paused}`), 30_000);
    const settled = await Promise.all(waiting.map((id) => live.wait(id))).finally(() => clearInterval(progress));
    const failures = settled.filter((action) => action.status !== "needs_input");
    if (failures.length > 0) console.log(`(e) ${failures.length} of ${paused} did not pause: ${[...new Set(failures.map((action) => action.error?.code ?? action.status))].join(", ")}`);
    const held = live.server.service.engine.core.runner.pausedCount;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const mbPerPausedPage = (chromiumPssMb() - before) / held;
    const busy = await postRate(live, workers);
    for (const id of waiting) await live.api("POST", `/v1/actions/${id}/cancel`);
    await live.until(() => live.server.service.engine.core.runner.pausedCount === 0, 60_000);
    const quietAfter = await postRate(live, workers);
    const quiet = (quietBefore + quietAfter) / 2;
    return { paused: held, ratio: busy / quiet, quiet, busy, mbPerPausedPage };
  } finally {
    await live.close();
  }
}

const FORM_PAGE = `<!doctype html><html><head><title>Check your email</title></head><body><h1>Check your email</h1>
<p>We emailed a code. Enter it below to finish signing in.</p><form method="post" action="/code"><label for="code">Code</label>
<input type="text" id="code" name="code" autocomplete="one-time-code"><button type="submit">Verify</button></form></body></html>`;

/**
 * The floor of (e): what `idle` open pages cost 16 busy ones in raw Playwright on this machine's
 * Chromium (one browser, a context per page, the service's flags). Each busy page loads a form,
 * fills it and submits it, over and over; each idle page sits at the form, as a page paused at
 * an emailed code does. Ops/s with the idle pages open ÷ without (before and after, averaged).
 */
export async function idlePagesFloor(idle = Number(process.env.BENCH_PAUSED ?? 200), seconds = 20): Promise<{ ratio: number; quiet: number; busy: number }> {
  const server = createServer((request, response) => {
    if (request.method === "POST") {
      request.resume();
      request.on("end", () => response.writeHead(303, { location: "/" }).end());
      return;
    }
    response.writeHead(200, { "content-type": "text/html" }).end(FORM_PAGE);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/code`;
  const browser = await chromium.launch({ executablePath: findChromium(undefined)!.path, args: CHROMIUM_ARGS });
  try {
    const workers: Page[] = await Promise.all(Array.from({ length: 16 }, async () => (await browser.newContext()).newPage()));
    const rate = async (): Promise<number> => {
      let ops = 0;
      const end = performance.now() + seconds * 1000;
      await Promise.all(
        workers.map(async (page) => {
          while (performance.now() < end) {
            await page.goto(url);
            await page.fill("#code", "123456");
            await Promise.all([page.waitForEvent("load"), page.click("button")]);
            ops += 1;
          }
        }),
      );
      return ops / seconds;
    };
    await rate(); // warm-up
    const quietBefore = await rate();
    const idleContexts = [];
    for (let i = 0; i < idle; i++) {
      const context = await browser.newContext();
      await (await context.newPage()).goto(url);
      idleContexts.push(context);
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const busy = await rate();
    for (const context of idleContexts) await context.close();
    const quietAfter = await rate();
    const quiet = (quietBefore + quietAfter) / 2;
    return { ratio: busy / quiet, quiet, busy };
  } finally {
    await browser.close();
    server.close();
  }
}

/** The same work on one local browser and on two browser servers, alternating rounds; CPU of this (the coordinator's) process per action. */
export async function fleetRate(rounds = 3): Promise<{ local: number; fleet: number; cpuMsPerAction: number }> {
  const servers = await Promise.all([startBrowserServer(), startBrowserServer()]);
  const local = await startLiveService({ env: SERVICE_ENV });
  const fleet = await startLiveService({ env: { ...SERVICE_ENV, BROWSER_WS_ENDPOINTS: servers.map((server) => server.endpoint).join(",") } });
  try {
    const [localIds, fleetIds] = [await connectedAccounts(local, 16), await connectedAccounts(fleet, 16)];
    await postRate(local, localIds, 1);
    await postRate(fleet, fleetIds, 1);
    let localRate = 0;
    let fleetRate = 0;
    let cpuMs = 0;
    for (let round = 0; round < rounds; round++) {
      localRate += await postRate(local, localIds);
      const cpu = process.cpuUsage();
      fleetRate += await postRate(fleet, fleetIds);
      const used = process.cpuUsage(cpu);
      cpuMs += (used.user + used.system) / 1000;
    }
    return { local: localRate / rounds, fleet: fleetRate / rounds, cpuMsPerAction: cpuMs / (rounds * fleetIds.length * 2) };
  } finally {
    await fleet.close();
    await local.close();
    for (const server of servers) server.stop();
  }
}
