/**
 * Long-poll load: one real `serve` (child process, real Chromium and SQLite) against a sandbox child.
 * For CHAOS_LOAD_SECONDS (60): 16 accounts post in a loop; CHAOS_LOAD_POLLERS (200) clients loop
 * `GET /v1/actions/{id}?wait=30` — on posts in flight (they return as the post ends) and on posts
 * parked behind an account waiting at needs_input (they hold the full 30 s); and a few clients poll
 * `?wait=0` for the latency figure. Any non-2xx answer, network error or failed post is an error:
 * listed, and the exit code is 1.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../test/helpers/processes.js";
import { createSandboxUser, networkCause, percentile, sleep, startSandboxProcess, startServeProcess, within } from "../../test/chaos/kill-support.js";

const SECONDS = Number(process.env.CHAOS_LOAD_SECONDS ?? 60);
const POLLERS = Number(process.env.CHAOS_LOAD_POLLERS ?? 200);
const POSTERS = 16;
const LATENCY_CLIENTS = 4;
const PARKED = 20;
const TERMINAL = new Set(["succeeded", "failed", "canceled"]);

interface LoadError {
  kind: string;
  what: string;
  detail: string;
  atS: number;
}

const errors: LoadError[] = [];
const t0 = Date.now();
let stopping = false;
function error(kind: string, what: string, detail: string): void {
  errors.push({ kind, what, detail: detail.slice(0, 300), atS: (Date.now() - t0) / 1000 });
}

const dir = mkdtempSync(join(tmpdir(), "action-service-chaos-load-"));
// However this process ends (a failed setup included), its children end with it.
const children: ChildProcess[] = [];
process.on("exit", () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});
const sandbox = await startSandboxProcess(join(dir, "sandbox.log"));
children.push(sandbox.child);
const serve = await startServeProcess({
  dataDir: join(dir, "data"),
  port: await freePort(),
  sandboxUrl: sandbox.url,
  logFile: join(dir, "serve.log"),
  env: {
    ACTION_SERVICE_LOG_LEVEL: "warn",
    ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "1000000",
    ACTION_SERVICE_FREE_CREDITS: "1000000",
    ...(process.env.BROWSER_EXECUTABLE_PATH ? { BROWSER_EXECUTABLE_PATH: process.env.BROWSER_EXECUTABLE_PATH } : {}),
  },
});
children.push(serve.child);
let serveExited = false;
void serve.exited.then((exit) => {
  serveExited = true;
  if (!stopping) error("serve", "process", `exited on its own: code ${exit.code}, signal ${exit.signal}`);
});
const key = serve.firstKey!;
const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };

/** One request; non-2xx and network errors are recorded and answered with undefined. */
async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any } | undefined> {
  try {
    const response = await fetch(serve.url + path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await response.text();
    if (response.status < 200 || response.status > 299) {
      error(`http ${response.status}`, `${method} ${path.replace(/act_[\w-]+/, "act_…")}`, text);
      return undefined;
    }
    return { status: response.status, json: text ? JSON.parse(text) : undefined };
  } catch (caught) {
    error("network", `${method} ${path.replace(/act_[\w-]+/, "act_…")}`, networkCause(caught));
    return undefined;
  }
}

let serial = 0;
const run = Date.now().toString(36);
async function account(challenge: string): Promise<string> {
  const handle = `l${run}${++serial}`;
  await createSandboxUser(sandbox.url, handle, challenge);
  const created = await call("POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password" });
  if (!created) throw new Error(`could not add account ${handle}: ${JSON.stringify(errors.at(-1))}`);
  return created.json.id;
}

// ---- setup: the posting accounts, signed in; one account waiting at needs_input with posts parked behind it
const posters = await Promise.all(Array.from({ length: POSTERS }, () => account("none")));
const connects = await Promise.all(posters.map((id) => call("POST", "/v1/actions?wait=30", { account_id: id, type: "connect", params: {} })));
if (connects.some((response) => response?.json.status !== "succeeded")) throw new Error(`connect failed: ${JSON.stringify(connects.map((response) => response?.json.status))}`);
const waiting = await account("email");
const gate = await call("POST", "/v1/actions?wait=30", { account_id: waiting, type: "connect", params: {} });
if (gate?.json.status !== "needs_input") throw new Error(`the gate action is ${gate?.json.status}, expected needs_input`);
const parked: string[] = [];
for (let i = 0; i < PARKED; i++) {
  const created = await call("POST", "/v1/actions", { account_id: waiting, type: "post", params: { text: `parked ${run} ${i}` } });
  if (created?.json.status !== "queued") throw new Error(`parked action is ${created?.json.status}`);
  parked.push(created.json.id);
}
const setupErrors = errors.length;
console.log(`  … setup: ${POSTERS} accounts signed in, ${PARKED} posts parked behind ${gate.json.id} at needs_input (${((Date.now() - t0) / 1000).toFixed(1)} s)`);

// ---- the load
const start = Date.now();
const end = start + SECONDS * 1000;
const inFlight = new Set<string>();
const known: string[] = [...parked];
const completed: Record<string, number> = {};
const postLatencies: number[] = [];
let postsStarted = 0;
let completedInWindow = 0;

async function poster(accountId: string, index: number): Promise<void> {
  while (Date.now() < end) {
    const began = Date.now();
    postsStarted += 1;
    // No wait on create: the id goes to the long pollers at once; this client then long-polls it itself.
    const created = await call("POST", "/v1/actions", { account_id: accountId, type: "post", params: { text: `load ${run} ${index} ${postsStarted} ${Math.random().toString(36).slice(2)}` } });
    if (!created) {
      await sleep(500);
      continue;
    }
    let action = created.json;
    known.push(action.id);
    inFlight.add(action.id);
    while (!TERMINAL.has(action.status)) {
      const read = await call("GET", `/v1/actions/${action.id}?wait=30`);
      if (!read) break;
      action = read.json;
    }
    inFlight.delete(action.id);
    if (!TERMINAL.has(action.status)) continue;
    const label = action.status === "failed" ? `failed ${action.error?.code}` : action.status;
    completed[label] = (completed[label] ?? 0) + 1;
    if (Date.now() <= end) completedInWindow += 1;
    postLatencies.push(Date.now() - began);
    if (action.status !== "succeeded") error("action", `post ${action.id}`, `${label}: ${action.error?.message ?? ""}`);
  }
}

const longPolls = { started: 0, done: 0, heldToTimeout: 0, endedOnChange: 0, holds: [] as number[] };
async function longPoller(): Promise<void> {
  await sleep(Math.random() * 2_000);
  while (Date.now() < end) {
    const live = [...inFlight];
    const onParked = live.length === 0 || Math.random() < 0.5;
    const id = onParked ? parked[Math.floor(Math.random() * parked.length)]! : live[Math.floor(Math.random() * live.length)]!;
    const began = Date.now();
    longPolls.started += 1;
    const read = await call("GET", `/v1/actions/${id}?wait=30`);
    const held = Date.now() - began;
    if (!read) {
      await sleep(500);
      continue;
    }
    longPolls.done += 1;
    longPolls.holds.push(held);
    if (TERMINAL.has(read.json.status)) {
      longPolls.endedOnChange += 1;
      inFlight.delete(id);
    } else if (held >= 29_000) longPolls.heldToTimeout += 1;
    else error("long poll", `GET /v1/actions/${id}?wait=30`, `returned after ${held} ms with the action still ${read.json.status}${onParked ? " (parked behind needs_input)" : ""}, not at its end or ~30 s`);
  }
}

const quick: number[] = [];
const health: number[] = [];
const control: number[] = [];
async function latencyPoller(): Promise<void> {
  while (Date.now() < end) {
    const id = known[Math.floor(Math.random() * known.length)]!;
    let began = performance.now();
    const read = await call("GET", `/v1/actions/${id}?wait=0`);
    if (read) quick.push(performance.now() - began);
    // The same server's cheapest route, for comparison: what of the latency is the machine, not the action route.
    began = performance.now();
    if (await call("GET", "/healthz")) health.push(performance.now() - began);
    // Another process on the same machine (the sandbox): what of that is the machine's CPU, not serve's event loop.
    began = performance.now();
    const other = await fetch(`${sandbox.url}/_sandbox/posts?author=alice`).then((response) => response.text().then(() => response.ok), () => false);
    if (other) control.push(performance.now() - began);
    await sleep(20);
  }
}

let rssMaxMb = 0;
const sampler = setInterval(() => {
  try {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${serve.pid}/status`, "utf8"))?.[1] ?? 0);
    rssMaxMb = Math.max(rssMaxMb, kb / 1024);
  } catch {
    // serve has gone: recorded by its exit handler
  }
}, 1_000);
const progress = setInterval(() => {
  console.log(`  … ${((Date.now() - start) / 1000).toFixed(0)} s: posts completed ${completedInWindow}, long polls ${longPolls.done}, wait=0 polls ${quick.length}, errors ${errors.length - setupErrors}`);
}, 10_000);

await Promise.all([
  ...posters.map((id, index) => poster(id, index)),
  ...Array.from({ length: POLLERS }, () => longPoller()),
  ...Array.from({ length: LATENCY_CLIENTS }, () => latencyPoller()),
]);
clearInterval(progress);
clearInterval(sampler);
const windowS = SECONDS;

// ---- after: the parked actions are still queued behind the gate; cancel them all; the service stays healthy
for (const id of parked) {
  const read = await call("GET", `/v1/actions/${id}`);
  if (read && read.json.status !== "queued") error("parked", `GET /v1/actions/${id}`, `expected queued, is ${read.json.status}`);
}
for (const id of [...parked, gate.json.id as string]) await call("POST", `/v1/actions/${id}/cancel`);
await call("GET", "/healthz");

stopping = true;
serve.child.kill("SIGTERM");
const stopped = await within(serve.exited, 30_000);
if (!stopped) {
  error("serve", "SIGTERM", "did not stop within 30 s");
  serve.child.kill("SIGKILL");
} else if (stopped.code !== 0 && !serveExited) error("serve", "SIGTERM", `exit code ${stopped.code}`);
sandbox.child.kill("SIGTERM");
await sandbox.exited;

const total = Object.values(completed).reduce((sum, count) => sum + count, 0);
const ms = (value: number): string => `${value.toFixed(1)} ms`;
console.log(`long-poll load (${windowS} s, ${POLLERS} long-poll clients, ${POSTERS} accounts posting, ${LATENCY_CLIENTS} wait=0 clients)`);
console.log(`  posts: ${total} completed (${completedInWindow} in the window) = ${(completedInWindow / windowS).toFixed(2)} actions/s; ${Object.entries(completed).map(([label, count]) => `${label} ${count}`).join(", ")}; create→end p50 ${percentile(postLatencies, 50)} ms, p99 ${percentile(postLatencies, 99)} ms`);
console.log(`  long polls (?wait=30): ${longPolls.done} answered of ${longPolls.started} sent; ${longPolls.endedOnChange} ended with the action, ${longPolls.heldToTimeout} held the full 30 s; hold p50 ${percentile(longPolls.holds, 50)} ms`);
console.log(`  GET /v1/actions/{id}?wait=0: ${quick.length} requests (${(quick.length / windowS).toFixed(1)}/s); p50 ${ms(percentile(quick, 50))}, p99 ${ms(percentile(quick, 99))}, max ${ms(Math.max(...quick))}`);
console.log(`  GET /healthz alongside (same clients): ${health.length} requests; p50 ${ms(percentile(health, 50))}, p99 ${ms(percentile(health, 99))}, max ${ms(Math.max(...health))}`);
console.log(`  control, GET /_sandbox/posts on the sandbox process: p50 ${ms(percentile(control, 50))}, p99 ${ms(percentile(control, 99))}, max ${ms(Math.max(...control))}`);
console.log(`  serve RSS max ${rssMaxMb.toFixed(0)} MB`);
const counts = new Map<string, number>();
for (const item of errors) counts.set(`${item.kind} ${item.what}`, (counts.get(`${item.kind} ${item.what}`) ?? 0) + 1);
console.log(`  errors: ${errors.length}${errors.length ? ` — ${[...counts].map(([label, count]) => `${label} ×${count}`).join("; ")}` : ""}`);
for (const item of errors.slice(0, 30)) console.log(`    - at ${item.atS.toFixed(1)} s ${item.kind} ${item.what}: ${item.detail}`);
if (errors.length === 0) rmSync(dir, { recursive: true, force: true });
else console.log(`  logs kept in ${dir}`);
console.log(errors.length === 0 ? "OK" : "FAILED");
process.exit(errors.length === 0 ? 0 : 1);
