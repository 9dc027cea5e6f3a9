/**
 * kill -9 chaos (shared by test/chaos/kill.test.ts and bench/chaos/kill.ts).
 *
 * A real sandbox in its own child process (it outlives every kill), real `node dist/cli.js serve`
 * children, real Chromium. One coordinator on a temp data dir's SQLite file, or several (each with
 * its own data dir: several machines) on one PostgreSQL database. Clients post unique texts through
 * the coordinators in turn (many with an Idempotency-Key; a client that loses its connection
 * retries the same key, through the next coordinator, as a real client would) while a killer sends
 * SIGKILL to the last coordinator at random moments and starts it again on the same data dir and
 * port. After the last restart everything must settle, and then:
 * - nothing lost: every action the client got an id for exists, every Idempotency-Key names one action;
 * - nothing stuck: every action is terminal within `settleTimeoutMs` of the final restart;
 * - nothing done twice: each text is on the sandbox at most once; each succeeded action's exactly once;
 * - no double charge: each action costs 0 or its price (by the DESIGN §7 rule), at most one hold each;
 * - ledger = balance: read from the store after every `serve` has stopped;
 * - with several coordinators: accounts made through one are seen by all, and more than one ran posts.
 */
import Database from "better-sqlite3";
import pg from "pg";
import { spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isCharged } from "../../src/domain/credits.js";
import type { ActionErrorCode } from "../../src/domain/errors.js";
import type { ActionStatus } from "../../src/domain/status.js";
import { INTERRUPTED_AFTER_COMMIT } from "../../src/engine/execution/index.js";
import { CLI, START_DEADLINE_MS, freePort } from "../helpers/processes.js";
import { eventually } from "../helpers/wait.js";

// ---------------------------------------------------------------------------------------------
// Small utilities

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `promise`'s value, or undefined once `ms` have passed (the timer is cleared either way: nothing lingers). */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** A seeded PRNG (mulberry32): the same seed gives the same plan (texts, keys, kill points). */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Nearest-rank percentile (p in 0–100) of `values`; NaN when empty. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** The network-level cause of a failed fetch (`ECONNREFUSED`, `ECONNRESET`, `UND_ERR_SOCKET`, …). */
export function networkCause(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (error as Error)?.message ?? String(error);
}

// ---------------------------------------------------------------------------------------------
// Real processes

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A child process started from dist/cli.js, its output appended to a log file. */
export interface CliProcess {
  child: ChildProcess;
  pid: number;
  url: string;
  exited: Promise<ChildExit>;
  /** Everything it wrote (stdout and stderr), for failure messages. */
  output(): string;
}

function spawnCli(command: string, env: Record<string, string>, logFile: string): Omit<CliProcess, "url"> {
  const child = spawn(process.execPath, [CLI, command], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (chunk: Buffer): void => {
    const text = chunk.toString();
    output += text;
    if (output.length > 2_000_000) output = output.slice(-1_000_000);
    appendFileSync(logFile, text);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const exited = new Promise<ChildExit>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  return { child, pid: child.pid!, exited, output: () => output };
}

/** Resolves once `check` holds; a process that exits first, or does not come up in time, is an error (and is killed). */
async function waitUntil(check: () => Promise<boolean>, proc: Omit<CliProcess, "url">, what: string): Promise<void> {
  const { child } = proc;
  try {
    await eventually(check, {
      what: `${what} to come up`,
      timeoutMs: START_DEADLINE_MS,
      everyMs: 50,
      errorsAreNotYet: true,
      abandon: () => (child.exitCode !== null || child.signalCode !== null ? `it exited (${child.exitCode ?? child.signalCode})` : undefined),
    });
  } catch (error) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await proc.exited;
    }
    throw new Error(`${error instanceof Error ? error.message : String(error)}: ${proc.output().slice(-4000)}`);
  }
}

/** `action-service sandbox` in its own process: it survives every kill of `serve`. */
export async function startSandboxProcess(logFile: string): Promise<CliProcess> {
  const port = await freePort();
  const proc = spawnCli("sandbox", { SANDBOX_PORT: String(port) }, logFile);
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(async () => (await fetch(`${url}/_sandbox/posts?author=alice`)).ok, proc, "sandbox");
  return { ...proc, url };
}

/** `action-service serve` on `dataDir` and `port`; resolves once `/healthz` answers. */
export async function startServeProcess(options: { dataDir: string; port: number; sandboxUrl: string; logFile: string; env?: Record<string, string> }): Promise<CliProcess & { firstKey: string | undefined }> {
  const proc = spawnCli(
    "serve",
    {
      ACTION_SERVICE_DATA_DIR: options.dataDir,
      ACTION_SERVICE_PORT: String(options.port),
      SANDBOX_URL: options.sandboxUrl,
      ACTION_SERVICE_LOG_LEVEL: "info",
      ...options.env,
    },
    options.logFile,
  );
  const url = `http://127.0.0.1:${options.port}`;
  await waitUntil(async () => (await fetch(`${url}/healthz`)).ok, proc, "serve");
  const lines = proc.output().split("\n").map((line) => line.trim());
  const keyLine = lines.findIndex((line) => line.startsWith("First start"));
  return { ...proc, url, firstKey: keyLine >= 0 ? lines[keyLine + 1] : undefined };
}

/** Creates a sandbox user (password `sandbox-password`) through the control API. */
export async function createSandboxUser(sandboxUrl: string, handle: string, challenge = "none"): Promise<void> {
  const response = await fetch(`${sandboxUrl}/_sandbox/users`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ handle, name: `Chaos ${handle}`, password: "sandbox-password", challenge }),
  });
  if (response.status !== 201) throw new Error(`sandbox user ${handle}: ${response.status} ${await response.text()}`);
}

export async function sandboxSettings(sandboxUrl: string, settings: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${sandboxUrl}/_sandbox/settings`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(settings) });
  if (!response.ok) throw new Error(`sandbox settings: ${response.status} ${await response.text()}`);
}

// ---------------------------------------------------------------------------------------------
// The run

export interface KillChaosOptions {
  accounts: number;
  actions: number;
  kills: number;
  /** Share of actions sent with an Idempotency-Key (0–1). */
  idempotentShare: number;
  /** Client workers, each with one action in flight at a time. */
  clients: number;
  /** Sandbox `response_delay_ms`: every form POST answers this late, widening the window past the commit point. */
  platformDelayMs: number;
  /** After the threshold of a kill is reached, it lands 0…this many ms later. */
  killJitterMs: number;
  /** After the final restart every action must be terminal within this. */
  settleTimeoutMs: number;
  seed: number;
  /** Keep the temp dir (data dir and logs) even when every promise held. */
  keep?: boolean;
  env?: Record<string, string>;
  log?: (line: string) => void;
  /**
   * `serve` processes, each with its own data dir, on one store (1 when unset). More than one
   * needs `database`. The last is the one killed.
   */
  coordinators?: number;
  /** A PostgreSQL database they all use; unset, the (one) coordinator's SQLite file. */
  database?: { url: string; masterKey: string };
}

export interface KillRecord {
  n: number;
  atMs: number;
  uptimeMs: number;
  /** What the store said just before the SIGKILL, e.g. `running: 5 (2 past commit), queued: 3`. */
  snapshot: string;
  exit: string;
  restartMs: number;
}

export interface KillChaosReport {
  seed: number;
  dir: string;
  actionsPlanned: number;
  actionsWithId: number;
  idempotent: number;
  unacknowledged: number;
  actionsInStore: number;
  kills: KillRecord[];
  serveStarts: number;
  byOutcome: Record<string, number>;
  /** Terminal actions by the coordinator (1-based) whose runner ran them last; `?` for a runner not seen. */
  byCoordinator: Record<string, number>;
  postsMade: number;
  duplicatePosts: number;
  connectionErrors: number;
  retriesAfterConnectionError: number;
  replayedAfterRetry: number;
  conflictsWhileInFlight: number;
  recoveredToQueued: number;
  recoveredFailed: number;
  errorLogLines: number;
  ledgerRows: number;
  balance: number;
  ledgerSum: number;
  totalMs: number;
  settleMs: number;
  restartMs: { min: number; median: number; max: number };
  latencyMs: { p50: number; p99: number; max: number };
  violations: string[];
}

interface Planned {
  n: number;
  account: number;
  text: string;
  key?: string;
  wait: number;
}

interface Outcome {
  planned: Planned;
  id?: string;
  /** A non-idempotent POST whose connection broke after it was sent: the client cannot know. */
  unacknowledged: boolean;
  attempts: number;
  connectionErrors: number;
  replayed: boolean;
  final?: any;
  startedAt: number;
  endedAt?: number;
}

const TERMINAL = new Set(["succeeded", "failed", "canceled"]);

export async function runKillChaos(options: KillChaosOptions): Promise<KillChaosReport> {
  const log = options.log ?? (() => {});
  const rand = random(options.seed);
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), "action-service-chaos-kill-"));
  if ((options.coordinators ?? 1) > 1 && !options.database) throw new Error("several coordinators need a shared database (options.database)");
  const violations: string[] = [];
  const violate = (message: string): void => {
    if (!violations.includes(message)) violations.push(message);
    log(`VIOLATION ${message}`);
  };
  let keep = options.keep ?? false;
  const sandbox = await startSandboxProcess(join(dir, "sandbox.log")).catch((error: Error) => {
    keep = true;
    throw error;
  });
  try {
    return await runAgainst(options, { dir, sandbox, violations, violate, rand, started });
  } catch (error) {
    keep = true;
    (error as Error).message += ` (data dir and logs kept in ${dir})`;
    throw error;
  } finally {
    if (sandbox.child.exitCode === null && sandbox.child.signalCode === null) {
      sandbox.child.kill("SIGKILL");
      await sandbox.exited;
    }
    if (violations.length === 0 && !keep) rmSync(dir, { recursive: true, force: true });
  }
}

interface RunContext {
  dir: string;
  sandbox: CliProcess;
  violations: string[];
  violate: (message: string) => void;
  rand: () => number;
  started: number;
}

/** A coordinator: its data dir and port stay the same across restarts; `proc` is the process running now. */
interface Coordinator {
  n: number;
  dataDir: string;
  port: number;
  logFile: string;
  proc: CliProcess & { firstKey: string | undefined };
}

async function runAgainst(options: KillChaosOptions, { dir, sandbox, violations, violate, rand, started }: RunContext): Promise<KillChaosReport> {
  const log = options.log ?? (() => {});
  const count = options.coordinators ?? 1;
  const serveEnv = {
    ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "1000000",
    ACTION_SERVICE_FREE_CREDITS: "1000000",
    ...(process.env.BROWSER_EXECUTABLE_PATH ? { BROWSER_EXECUTABLE_PATH: process.env.BROWSER_EXECUTABLE_PATH } : {}),
    ...(options.database ? { ACTION_SERVICE_DATABASE_URL: options.database.url, ACTION_SERVICE_MASTER_KEY: options.database.masterKey } : {}),
    ...options.env,
  };
  const store = options.database ? await PostgresReader.open(options.database.url) : undefined;
  let serveStarts = 0;
  const intentional = new Set<number>();
  const start = async (coordinator: Omit<Coordinator, "proc">): Promise<Coordinator["proc"]> => {
    serveStarts += 1;
    const proc = await startServeProcess({ dataDir: coordinator.dataDir, port: coordinator.port, sandboxUrl: sandbox.url, logFile: coordinator.logFile, env: serveEnv });
    // A serve that ends without being told to is a broken promise (DESIGN §11: nothing ends the process).
    void proc.exited.then((exit) => {
      if (!intentional.has(proc.pid)) violate(`serve #${coordinator.n} (pid ${proc.pid}) exited on its own: code ${exit.code}, signal ${exit.signal}; last output: ${proc.output().slice(-1500)}`);
    });
    return proc;
  };
  const coordinators: Coordinator[] = [];
  let watching = true;
  let watcher = Promise.resolve();
  const openStore = (): StoreReader => store ?? SqliteReader.open(join(coordinators[0]!.dataDir, "action-service.db"));
  try {
    // The first start on an empty store prints the admin key; the others start on a store that has one.
    for (let n = 1; n <= count; n++) {
      const plan = { n, dataDir: join(dir, `data-${n}`), port: await freePort(), logFile: join(dir, `serve-${n}.log`) };
      coordinators.push({ ...plan, proc: await start(plan) });
    }
    const key = coordinators[0]!.proc.firstKey;
    if (!key) throw new Error(`serve printed no admin key: ${coordinators[0]!.proc.output()}`);
    const headers = (extra: Record<string, string> = {}): Record<string, string> => ({ authorization: `Bearer ${key}`, "content-type": "application/json", ...extra });
    const base = (turn: number): string => `http://127.0.0.1:${coordinators[turn % count]!.port}`;
    // Which coordinator each runner id was: read from the runners table while they run.
    const runners = new Map<string, number>();
    const byPort = new Map(coordinators.map((coordinator) => [String(coordinator.port), coordinator.n]));
    const noteRunners = async (): Promise<void> => {
      if (!store) return;
      for (const row of await store.all<{ id: string; public_url: string | null }>("SELECT id, public_url FROM runners")) {
        const n = row.public_url ? byPort.get(new URL(row.public_url).port) : undefined;
        if (n !== undefined) runners.set(row.id, n);
      }
    };
    watcher = (async () => {
      while (watching) {
        await noteRunners().catch(() => undefined);
        await sleep(200);
      }
    })();

    await sandboxSettings(sandbox.url, { response_delay_ms: options.platformDelayMs });
    const price = await postPrice(base(0), headers());
    const run = `${options.seed.toString(36)}${Date.now().toString(36)}`;
    const handles: string[] = [];
    const accountIds: string[] = [];
    // Made through the coordinators in turn; each must be seen by all of them.
    for (let i = 0; i < options.accounts; i++) {
      const handle = `k${run}${i}`.slice(0, 30);
      await createSandboxUser(sandbox.url, handle);
      const response = await fetch(`${base(i)}/v1/accounts`, { method: "POST", headers: headers(), body: JSON.stringify({ platform: "sandbox", username: handle, password: "sandbox-password" }) });
      if (response.status !== 201) throw new Error(`account ${handle}: ${response.status} ${await response.text()}`);
      handles.push(handle);
      accountIds.push(((await response.json()) as { id: string }).id);
    }
    for (let turn = 0; turn < count; turn++) {
      for (const id of accountIds) {
        const response = await fetch(`${base(turn)}/v1/accounts/${id}`, { headers: headers() });
        if (response.status !== 200) violate(`account ${id} made through another coordinator: GET through #${turn + 1} answered ${response.status}`);
      }
    }
    const plan: Planned[] = Array.from({ length: options.actions }, (_, n) => ({
      n,
      account: n % options.accounts,
      text: `chaos ${run} #${n} ${Math.floor(rand() * 1e9).toString(36)}`,
      ...(rand() < options.idempotentShare ? { key: `chaos-${run}-${n}` } : {}),
      wait: [0, 0, 5, 30][Math.floor(rand() * 4)]!,
    }));
    const byText = new Map(plan.map((planned) => [planned.text, planned]));
    // Kill k lands once the clients have taken a random point of the k-th slice of the plan, then 0…jitter ms later.
    const slice = options.actions / (options.kills + 1);
    const thresholds = Array.from({ length: options.kills }, (_, k) => Math.floor(slice * (k + 0.5 + rand())));
    const jitters = Array.from({ length: options.kills }, () => Math.floor(rand() * options.killJitterMs));

    // ---- clients
    let taken = 0;
    let deadline = Number.POSITIVE_INFINITY;
    let conflicts = 0;
    const outcomes: Outcome[] = [];
    const body = (planned: Planned): string => JSON.stringify({ account_id: accountIds[planned.account], type: "post", params: { text: planned.text } });

    const create = async (outcome: Outcome): Promise<void> => {
      const { planned } = outcome;
      for (;;) {
        if (Date.now() > deadline) return violate(`#${planned.n}: no response to its POST within ${options.settleTimeoutMs} ms of the final restart (key ${planned.key ?? "none"})`);
        outcome.attempts += 1;
        let status: number;
        let json: any;
        let replayed = false;
        try {
          // Through the coordinators in turn; a retry goes to the next one.
          const response = await fetch(`${base(planned.n + outcome.attempts - 1)}/v1/actions?wait=${planned.wait}`, { method: "POST", headers: headers(planned.key ? { "idempotency-key": planned.key } : {}), body: body(planned) });
          status = response.status;
          replayed = response.headers.get("idempotency-replayed") === "true";
          json = await response.json();
        } catch (error) {
          outcome.connectionErrors += 1;
          // Refused: nothing was sent, any client may try again. Otherwise only a keyed request may.
          if (!planned.key && networkCause(error) !== "ECONNREFUSED") {
            outcome.unacknowledged = true;
            return;
          }
          await sleep(150 + rand() * 250);
          continue;
        }
        if (status === 409 && planned.key) {
          conflicts += 1; // the first request with this key is still in flight (or its process has just died)
          await sleep(250);
          continue;
        }
        if (status === 503) {
          await sleep(250);
          continue;
        }
        if (status !== 200 && status !== 202) return violate(`#${planned.n}: POST /v1/actions answered ${status} ${JSON.stringify(json)}`);
        outcome.id = json.id;
        outcome.replayed = replayed;
        if (TERMINAL.has(json.status)) outcome.final = json;
        return;
      }
    };

    const follow = async (outcome: Outcome): Promise<void> => {
      while (!outcome.final) {
        if (Date.now() > deadline) return violate(`stuck: ${outcome.id} (#${outcome.planned.n}) not terminal ${options.settleTimeoutMs} ms after the final restart`);
        let status: number;
        let json: any;
        try {
          const response = await fetch(`${base(outcome.planned.n + outcome.connectionErrors)}/v1/actions/${outcome.id}?wait=30`, { headers: headers() });
          status = response.status;
          json = await response.json();
        } catch {
          outcome.connectionErrors += 1;
          await sleep(150 + rand() * 250);
          continue;
        }
        if (status === 404) return violate(`lost: ${outcome.id} (#${outcome.planned.n}) is a 404 after the client was given its id`);
        if (status === 503) {
          await sleep(250);
          continue;
        }
        if (status !== 200 && status !== 202) return violate(`GET ${outcome.id} answered ${status} ${JSON.stringify(json)}`);
        if (TERMINAL.has(json.status)) outcome.final = json;
        else if (json.status === "needs_input") {
          violate(`${outcome.id} (#${outcome.planned.n}) paused at needs_input (${json.challenge?.kind}) for a user with no challenge`);
          await sleep(500);
        }
      }
    };

    const worker = async (): Promise<void> => {
      while (taken < plan.length) {
        const planned = plan[taken++]!;
        const outcome: Outcome = { planned, unacknowledged: false, attempts: 0, connectionErrors: 0, replayed: false, startedAt: Date.now() };
        outcomes.push(outcome);
        await create(outcome);
        if (outcome.id) await follow(outcome);
        outcome.endedAt = Date.now();
      }
    };

    // ---- killer
    const kills: KillRecord[] = [];
    let finalRestartAt = Date.now();
    let lastStart = Date.now();
    const alive = (proc: CliProcess): boolean => proc.child.exitCode === null && proc.child.signalCode === null;
    const victim = coordinators.at(-1)!;
    const killer = async (): Promise<void> => {
      for (let k = 0; k < options.kills; k++) {
        while (taken < thresholds[k]! && taken < plan.length) {
          // A serve that died on its own (already a violation) is started again, or the clients would wait forever.
          for (const coordinator of coordinators) {
            if (alive(coordinator.proc)) continue;
            coordinator.proc = await start(coordinator);
            if (coordinator === victim) lastStart = Date.now();
          }
          await sleep(20);
        }
        await sleep(jitters[k]!);
        const snapshot = await storeSnapshot(openStore(), store === undefined);
        const atMs = Date.now() - started;
        const uptimeMs = Date.now() - lastStart;
        intentional.add(victim.proc.pid);
        victim.proc.child.kill("SIGKILL");
        const exit = await victim.proc.exited;
        // A moment of downtime, as a supervisor would take, varied so requests meet a refused port or a fresh process.
        await sleep(Math.floor(rand() * 400));
        const restartStarted = Date.now();
        victim.proc = await start(victim);
        lastStart = Date.now();
        const record: KillRecord = { n: k + 1, atMs, uptimeMs, snapshot, exit: exit.signal ?? `code ${exit.code}`, restartMs: lastStart - restartStarted };
        kills.push(record);
        log(`kill ${record.n}/${options.kills} at ${(atMs / 1000).toFixed(1)} s after ${(uptimeMs / 1000).toFixed(1)} s up (taken ${taken}/${plan.length}; ${snapshot}); back in ${record.restartMs} ms`);
      }
      finalRestartAt = Date.now();
      deadline = finalRestartAt + options.settleTimeoutMs;
      log(`final restart done; every action must end within ${options.settleTimeoutMs / 1000} s`);
    };

    const workers = Array.from({ length: options.clients }, () => worker());
    try {
      await killer();
    } catch (error) {
      deadline = 0; // the clients give up at once
      await Promise.allSettled(workers);
      throw error;
    }
    await Promise.all(workers);
    const settledAt = Date.now();
    log(`clients done ${((settledAt - finalRestartAt) / 1000).toFixed(1)} s after the final restart`);

    // ---- checks through the API (serve still up)
    await noteRunners();
    watching = false;
    await watcher;
    const listed = await listAll(base(0), headers());
    const storeByText = new Map<string, any[]>();
    for (const action of listed) {
      const text = String(action.params?.text);
      storeByText.set(text, [...(storeByText.get(text) ?? []), action]);
    }
    for (const outcome of outcomes) {
      if (!outcome.id) continue;
      if (!listed.some((action) => action.id === outcome.id)) violate(`lost: ${outcome.id} (#${outcome.planned.n}) is missing from GET /v1/actions`);
    }
    for (const [text, actions] of storeByText) {
      const planned = byText.get(text);
      if (!planned) violate(`phantom: action(s) ${actions.map((a) => a.id).join(", ")} with a text no client sent: ${JSON.stringify(text)}`);
      else if (actions.length > 1) violate(`#${planned.n} (key ${planned.key ?? "none"}) became ${actions.length} actions: ${actions.map((a) => `${a.id} ${a.status}`).join(", ")}`);
      for (const action of actions) if (!TERMINAL.has(action.status)) violate(`stuck: ${action.id} is ${action.status} after everything settled`);
    }
    for (const outcome of outcomes) {
      if (outcome.id && !outcome.final) continue; // already reported
      const known = storeByText.get(outcome.planned.text)?.[0];
      if (outcome.id && known && known.id !== outcome.id) violate(`#${outcome.planned.n}: the client holds ${outcome.id}, the store has ${known.id} for its text`);
    }
    // Every Idempotency-Key maps to one action: a replay of the same request names it, and says it is a replay.
    for (const outcome of outcomes) {
      const { planned } = outcome;
      if (!planned.key || !outcome.id) continue;
      // A browser_unavailable failure's record is deleted by design (the same key runs it again): not replayed here.
      if (outcome.final?.status === "failed" && outcome.final?.error?.code === "browser_unavailable") continue;
      const response = await fetch(`${base(planned.n + 1)}/v1/actions`, { method: "POST", headers: headers({ "idempotency-key": planned.key }), body: body(planned) });
      const json: any = await response.json();
      if (response.status !== 200 || json.id !== outcome.id || response.headers.get("idempotency-replayed") !== "true") {
        violate(`key ${planned.key}: replay answered ${response.status} ${json.id ?? JSON.stringify(json)} (replayed: ${response.headers.get("idempotency-replayed")}), the client holds ${outcome.id}`);
      }
    }

    // ---- checks against the sandbox: what really happened on the platform
    const posts = new Map<string, number>();
    for (const handle of handles) {
      const response = await fetch(`${sandbox.url}/_sandbox/posts?author=${handle}`);
      for (const post of (await response.json()) as { text: string }[]) posts.set(post.text, (posts.get(post.text) ?? 0) + 1);
    }
    let duplicatePosts = 0;
    for (const [text, count] of posts) {
      if (count > 1) {
        duplicatePosts += count - 1;
        violate(`duplicate post: ${JSON.stringify(text)} is on the sandbox ${count} times`);
      }
      if (!byText.has(text)) violate(`phantom post: ${JSON.stringify(text)} was posted but no client sent it`);
      const actions = storeByText.get(text) ?? [];
      // Posted: its action succeeded, or was interrupted past its commit point (which says the platform may have done it).
      if (actions.length > 0 && !actions.some((action) => action.status === "succeeded" || (action.status === "failed" && action.error?.code === "browser_error"))) {
        violate(`${JSON.stringify(text)} was posted but its action ended ${actions.map((action) => `${action.id} ${action.status} ${action.error?.code ?? ""}: ${action.error?.message ?? ""}`).join("; ")}`);
      }
    }
    for (const action of listed) {
      const text = String(action.params?.text);
      if (action.status === "succeeded" && posts.get(text) !== 1) violate(`${action.id} succeeded but its text is on the sandbox ${posts.get(text) ?? 0} times`);
      if (action.status === "failed" && action.error?.code === "rejected") violate(`${action.id} failed rejected (${action.error.message}): the service tried to post a unique text a second time`);
      const expected = isCharged(action.status as ActionStatus, action.error?.code as ActionErrorCode | undefined) ? price : 0;
      if (action.cost !== expected) violate(`${action.id} ${action.status} ${action.error?.code ?? ""} cost ${action.cost}, expected ${expected} (price ${price})`);
    }

    // ---- stop every serve, then read the store
    await Promise.all(
      coordinators.map(async ({ n, proc }) => {
        intentional.add(proc.pid);
        proc.child.kill("SIGTERM");
        const stopped = await within(proc.exited, 30_000);
        if (!stopped) {
          violate(`serve #${n} did not stop within 30 s of SIGTERM`);
          proc.child.kill("SIGKILL");
          await proc.exited;
        } else if (stopped.code !== 0) violate(`serve #${n} stopped with code ${stopped.code} signal ${stopped.signal} on SIGTERM`);
      }),
    );
    const db = await readStore(openStore(), store === undefined, price, violate);
    if (db.actions !== listed.length) violate(`the store holds ${db.actions} actions, GET /v1/actions listed ${listed.length}`);
    const keyed = outcomes.filter((outcome) => outcome.planned.key && outcome.id && !(outcome.final?.status === "failed" && outcome.final?.error?.code === "browser_unavailable"));
    for (const outcome of keyed) {
      const actionId = db.keys.get(outcome.planned.key!);
      if (actionId !== outcome.id) violate(`key ${outcome.planned.key}: the store maps it to ${actionId ?? "nothing"}, the client holds ${outcome.id}`);
    }

    const serveLog = coordinators.flatMap((coordinator) => logLines(coordinator.logFile));
    const byCoordinator: Record<string, number> = {};
    for (const action of listed) {
      const runnerId = db.runnerOf.get(action.id);
      if (runnerId === undefined) continue;
      const label = runners.has(runnerId) ? `#${runners.get(runnerId)}` : store ? "?" : "#1";
      byCoordinator[label] = (byCoordinator[label] ?? 0) + 1;
    }
    if (count > 1 && Object.keys(byCoordinator).filter((label) => label !== "?").length < 2) violate(`one coordinator ran every action: ${JSON.stringify(byCoordinator)}`);
    const recovered = serveLog.filter((line) => line.msg === "recovered an action of a runner that is gone");
    const byOutcome: Record<string, number> = {};
    for (const action of listed) {
      let label = action.status === "failed" ? `failed ${action.error?.code}` : action.status;
      if (action.error?.message === INTERRUPTED_AFTER_COMMIT) label += " (interrupted past commit)";
      else if (action.status === "failed" && String(action.error?.message ?? "").startsWith("Interrupted")) label += " (interrupted)";
      byOutcome[label] = (byOutcome[label] ?? 0) + 1;
    }
    const restartTimes = kills.map((kill) => kill.restartMs);
    const latencies = outcomes.filter((outcome) => outcome.final && outcome.endedAt).map((outcome) => outcome.endedAt! - outcome.startedAt);
    const report: KillChaosReport = {
      seed: options.seed,
      dir,
      actionsPlanned: plan.length,
      actionsWithId: outcomes.filter((outcome) => outcome.id).length,
      idempotent: plan.filter((planned) => planned.key).length,
      unacknowledged: outcomes.filter((outcome) => outcome.unacknowledged).length,
      actionsInStore: listed.length,
      kills,
      serveStarts,
      byOutcome,
      byCoordinator,
      postsMade: [...posts.values()].reduce((sum, count) => sum + count, 0),
      duplicatePosts,
      connectionErrors: outcomes.reduce((sum, outcome) => sum + outcome.connectionErrors, 0),
      retriesAfterConnectionError: outcomes.filter((outcome) => outcome.attempts > 1).length,
      replayedAfterRetry: outcomes.filter((outcome) => outcome.replayed).length,
      conflictsWhileInFlight: conflicts,
      recoveredToQueued: recovered.filter((line) => !line.committed).length,
      recoveredFailed: recovered.filter((line) => line.committed).length,
      errorLogLines: serveLog.filter((line) => typeof line.level === "number" && line.level >= 50).length,
      ledgerRows: db.ledgerRows,
      balance: db.balance,
      ledgerSum: db.ledgerSum,
      totalMs: Date.now() - started,
      settleMs: settledAt - finalRestartAt,
      restartMs: { min: Math.min(...restartTimes), median: percentile(restartTimes, 50), max: Math.max(...restartTimes) },
      latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies) },
      violations,
    };
    if (kills.length !== options.kills) violate(`only ${kills.length} of ${options.kills} kills happened`);
    return report;
  } finally {
    watching = false;
    await watcher;
    for (const { proc } of coordinators) {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null) continue;
      intentional.add(proc.pid);
      proc.child.kill("SIGKILL");
      await proc.exited;
    }
    await store?.close();
  }
}

async function postPrice(base: string, headers: Record<string, string>): Promise<number> {
  const response = await fetch(`${base}/v1/platforms`, { headers });
  const json = (await response.json()) as { data: { name: string; actions: { type: string; price: number }[] }[] };
  const price = json.data.find((platform) => platform.name === "sandbox")?.actions.find((action) => action.type === "post")?.price;
  if (typeof price !== "number") throw new Error(`no post price in GET /v1/platforms: ${JSON.stringify(json).slice(0, 500)}`);
  return price;
}

/** Every action of the workspace, through the paginated list. */
export async function listAll(base: string, headers: Record<string, string>): Promise<any[]> {
  const all: any[] = [];
  let cursor: string | undefined;
  do {
    const response = await fetch(`${base}/v1/actions?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { headers });
    if (response.status !== 200) throw new Error(`GET /v1/actions: ${response.status} ${await response.text()}`);
    const page = (await response.json()) as { data: any[]; next_cursor?: string };
    all.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return all;
}

/** Reads of the store the coordinators share, made beside them (plain SQL both databases take). */
export interface StoreReader {
  all<T>(query: string): Promise<T[]>;
  close(): Promise<void>;
}

/** The data dir's SQLite file, read-only (WAL readers do not block serve). */
class SqliteReader implements StoreReader {
  private constructor(private readonly db: Database.Database) {}

  static open(file: string): SqliteReader {
    return new SqliteReader(new Database(file, { readonly: true, fileMustExist: true }));
  }

  async all<T>(query: string): Promise<T[]> {
    return this.db.prepare(query).all() as T[];
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

/** The PostgreSQL database, through one connection; counts and sums come back as numbers. */
export class PostgresReader implements StoreReader {
  private constructor(private readonly client: pg.Client) {}

  static async open(url: string): Promise<PostgresReader> {
    const client = new pg.Client({ connectionString: url, types: { getTypeParser: (oid, format) => (oid === 20 || oid === 1700 ? Number : pg.types.getTypeParser(oid, format)) } });
    client.on("error", () => undefined);
    await client.connect();
    return new PostgresReader(client);
  }

  async all<T>(query: string, values: unknown[] = []): Promise<T[]> {
    return (await this.client.query(query, values)).rows as T[];
  }

  async close(): Promise<void> {
    await this.client.end().catch(() => undefined);
  }
}

/** The store's statuses while serve runs: for the kill log. Closes `reader` when `close` is set. */
async function storeSnapshot(reader: StoreReader, close: boolean): Promise<string> {
  try {
    const rows = await reader.all<{ status: string; committed: number; n: number }>(
      "SELECT status, CASE WHEN committed_at IS NULL THEN 0 ELSE 1 END AS committed, count(*) AS n FROM actions WHERE status IN ('queued','running','needs_input') GROUP BY 1, 2",
    );
    const count = (status: string, committed?: number): number => rows.filter((row) => row.status === status && (committed === undefined || Number(row.committed) === committed)).reduce((sum, row) => sum + Number(row.n), 0);
    return `running ${count("running")} (${count("running", 1)} past commit), queued ${count("queued")}, needs_input ${count("needs_input")}`;
  } catch (error) {
    return `no snapshot (${(error as Error).message})`;
  } finally {
    if (close) await reader.close();
  }
}

interface StoreFindings {
  actions: number;
  ledgerRows: number;
  balance: number;
  ledgerSum: number;
  keys: Map<string, string>;
  /** Action id → the runner that ran it last. */
  runnerOf: Map<string, string>;
}

/** The ledger and idempotency checks on the store, after every serve has stopped. Closes `reader` when `close` is set. */
async function readStore(reader: StoreReader, close: boolean, price: number, violate: (message: string) => void): Promise<StoreFindings> {
  try {
    const workspaces = await reader.all<{ id: string; balance: number; total: number }>(
      "SELECT w.id, w.balance, coalesce((SELECT sum(amount) FROM credit_ledger l WHERE l.workspace_id = w.id), 0) AS total FROM workspaces w",
    );
    for (const workspace of workspaces) {
      if (Number(workspace.total) !== Number(workspace.balance)) violate(`ledger ≠ balance in ${workspace.id}: rows sum to ${workspace.total}, balance is ${workspace.balance}`);
    }
    const actions = await reader.all<{ id: string; status: string; error_code: string | null; price: number; cost: number; runner_id: string | null }>("SELECT id, status, error_code, price, cost, runner_id FROM actions");
    const perAction = new Map<string, { hold: number; release: number; sum: number }>();
    for (const row of await reader.all<{ action_id: string; kind: string; amount: number }>("SELECT action_id, kind, amount FROM credit_ledger WHERE action_id IS NOT NULL")) {
      const entry = perAction.get(row.action_id) ?? { hold: 0, release: 0, sum: 0 };
      if (row.kind === "hold") entry.hold += 1;
      if (row.kind === "release") entry.release += 1;
      entry.sum += Number(row.amount);
      perAction.set(row.action_id, entry);
    }
    for (const action of actions) {
      if (!TERMINAL.has(action.status)) violate(`stuck in the store: ${action.id} is ${action.status} after serve stopped`);
      if (action.price !== price) violate(`${action.id} has price ${action.price}, the post price is ${price}`);
      if (action.cost !== 0 && action.cost !== action.price) violate(`${action.id} cost ${action.cost}: neither 0 nor its price ${action.price}`);
      const entry = perAction.get(action.id) ?? { hold: 0, release: 0, sum: 0 };
      if (entry.hold > 1) violate(`double hold: ${action.id} has ${entry.hold} holds in the ledger`);
      if (entry.release > 1) violate(`double release: ${action.id} has ${entry.release} releases in the ledger`);
      if (entry.release > entry.hold) violate(`${action.id} has a release without a hold`);
      if (-entry.sum !== action.cost) violate(`${action.id}: its ledger rows take ${-entry.sum}, its cost is ${action.cost} (${action.status} ${action.error_code ?? ""})`);
    }
    const keys = new Map<string, string>();
    const actionsByKey = new Map<string, string>();
    for (const row of await reader.all<{ key: string; state: string; action_id: string | null }>("SELECT key, state, action_id FROM idempotency_keys")) {
      if (row.state !== "done" || !row.action_id) violate(`idempotency key ${row.key} left ${row.state} with action ${row.action_id ?? "none"} after serve stopped`);
      if (row.action_id) {
        const other = actionsByKey.get(row.action_id);
        if (other) violate(`idempotency keys ${other} and ${row.key} both name ${row.action_id}`);
        actionsByKey.set(row.action_id, row.key);
        keys.set(row.key, row.action_id);
      }
    }
    const [ledger] = await reader.all<{ n: number }>("SELECT count(*) AS n FROM credit_ledger");
    return {
      actions: actions.length,
      ledgerRows: Number(ledger!.n),
      balance: workspaces.reduce((sum, workspace) => sum + Number(workspace.balance), 0),
      ledgerSum: workspaces.reduce((sum, workspace) => sum + Number(workspace.total), 0),
      keys,
      runnerOf: new Map(actions.filter((action) => action.runner_id).map((action) => [action.id, action.runner_id!])),
    };
  } finally {
    if (close) await reader.close();
  }
}

/** serve's pino lines (JSON), skipping anything else it printed. */
function logLines(file: string): any[] {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  const lines: any[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      lines.push(JSON.parse(line));
    } catch {
      // A line cut by the SIGKILL.
    }
  }
  return lines;
}

export function formatKillReport(report: KillChaosReport): string {
  const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  const lines = [
    `kill -9 chaos (seed ${report.seed})`,
    `  actions planned ${report.actionsPlanned}; with an id ${report.actionsWithId}; with an Idempotency-Key ${report.idempotent}; unacknowledged (no key, connection cut after sending) ${report.unacknowledged}; in the store ${report.actionsInStore}`,
    `  kills ${report.kills.length} (serve started ${report.serveStarts} times); restart to /healthz min ${report.restartMs.min} ms, median ${report.restartMs.median} ms, max ${report.restartMs.max} ms`,
    ...report.kills.map((kill) => `    #${kill.n} at ${seconds(kill.atMs)} after ${seconds(kill.uptimeMs)} up: ${kill.snapshot}; exit ${kill.exit}; back in ${kill.restartMs} ms`),
    `  by final status: ${Object.entries(report.byOutcome).sort((a, b) => b[1] - a[1]).map(([label, count]) => `${label} ${count}`).join("; ")}`,
    `  by the coordinator that ran them: ${Object.entries(report.byCoordinator).sort().map(([label, count]) => `${label} ${count}`).join("; ")}`,
    `  recovered by the restarted serve: ${report.recoveredToQueued} back to queued, ${report.recoveredFailed} failed past commit`,
    `  client: connection errors ${report.connectionErrors}; actions retried after one ${report.retriesAfterConnectionError}; replays (Idempotency-Replayed) ${report.replayedAfterRetry}; 409 while in flight ${report.conflictsWhileInFlight}`,
    `  posts made ${report.postsMade}; duplicate posts ${report.duplicatePosts}`,
    `  ledger: ${report.ledgerRows} rows summing to ${report.ledgerSum}; balance ${report.balance}`,
    `  serve error-level log lines ${report.errorLogLines}`,
    `  timings: total ${seconds(report.totalMs)}; settled ${seconds(report.settleMs)} after the final restart; create→terminal p50 ${report.latencyMs.p50} ms, p99 ${report.latencyMs.p99} ms, max ${report.latencyMs.max} ms`,
    report.violations.length === 0 ? "  every promise held" : `  BROKEN PROMISES (${report.violations.length}); logs and data kept in ${report.dir}:\n${report.violations.map((line) => `    - ${line}`).join("\n")}`,
  ];
  return lines.join("\n");
}
