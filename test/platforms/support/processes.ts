import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { eventually } from "../../helpers/wait.js";

export { freePort } from "../../helpers/processes.js";

/** Runs a command to its end; resolves with its stdout, rejects with its output when it fails. */
export function runCommand(command: string, args: readonly string[], options: SpawnOptions & { input?: string } = {}): Promise<string> {
  const { input, ...spawnOptions } = options;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...spawnOptions, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code, signal) => {
      if (code === 0) resolve(stdout);
      else reject(new Error(`${command} ${args.join(" ")} failed (${code ?? signal}):\n${stderr}${stdout}`.trimEnd()));
    });
    child.stdin!.end(input ?? "");
  });
}

/**
 * Ends a process started with `detached: true` together with everything in its process group
 * (php -S forks its workers into it): SIGTERM, then SIGKILL after `graceMs`.
 */
export async function killProcessGroup(child: ChildProcess, graceMs = 5_000): Promise<void> {
  process.off("exit", exitHandlers.get(child) ?? noop);
  exitHandlers.delete(child);
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) {
    signalGroup(child, "SIGKILL");
    return;
  }
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  signalGroup(child, "SIGTERM");
  const timer = setTimeout(() => signalGroup(child, "SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
  // Workers that outlived their parent.
  signalGroup(child, "SIGKILL");
}

const exitHandlers = new Map<ChildProcess, () => void>();
const noop = () => {};

/** Kills the child's process group if this process exits first (a test worker ended without its afterAll). */
export function killGroupOnExit(child: ChildProcess): void {
  const handler = () => signalGroup(child, "SIGKILL");
  exitHandlers.set(child, handler);
  process.once("exit", handler);
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // The group is gone already.
  }
}

/** Polls `probe` until it returns true; fails with `describe()` when `child` exits or time runs out. */
export async function waitUntil(probe: () => Promise<boolean>, options: { child: ChildProcess; timeoutMs: number; what: string; describe: () => string }): Promise<void> {
  const { child } = options;
  try {
    await eventually(probe, {
      what: `${options.what} to answer`,
      timeoutMs: options.timeoutMs,
      everyMs: 200,
      errorsAreNotYet: true,
      abandon: () => (child.exitCode !== null || child.signalCode !== null ? `it exited (${child.exitCode ?? child.signalCode})` : undefined),
    });
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}:\n${options.describe()}`);
  }
}

/**
 * PHP's own server (`php -S`, four workers) on 127.0.0.1:`port` serving `root`, run in `dir`
 * with its output in `dir`/server.log, ended with this process (`killGroupOnExit`). Resolves once
 * `ready` says it serves; a server that exits or never answers is ended and its log's tail thrown.
 */
export async function startPhpServer(options: { port: number; root: string; dir: string; phpArgs?: readonly string[]; env?: NodeJS.ProcessEnv; ready: () => Promise<boolean> }): Promise<ChildProcess> {
  const log = join(options.dir, "server.log");
  const logFd = openSync(log, "a");
  const server = spawn("php", [...(options.phpArgs ?? []), "-S", `127.0.0.1:${options.port}`, "-t", options.root], {
    cwd: options.dir,
    env: { ...(options.env ?? process.env), PHP_CLI_SERVER_WORKERS: "4" },
    detached: true,
    stdio: ["ignore", logFd, logFd],
  });
  closeSync(logFd);
  killGroupOnExit(server);
  try {
    await waitUntil(options.ready, { child: server, timeoutMs: 20_000, what: "php -S", describe: () => readFileSync(log, "utf8").slice(-2_000) });
  } catch (error) {
    await killProcessGroup(server);
    throw error;
  }
  return server;
}

/** Resident memory of a process and its descendants, in MiB (Linux /proc; undefined elsewhere). */
export async function treeRssMiB(pid: number): Promise<number | undefined> {
  const output = await runCommand("ps", ["-e", "-o", "pid=,ppid=,rss="]).catch(() => undefined);
  if (!output) return undefined;
  const rows = output.trim().split("\n").map((line) => line.trim().split(/\s+/).map(Number) as [number, number, number]);
  const tree = new Set([pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [child, parent] of rows) {
      if (tree.has(parent) && !tree.has(child)) {
        tree.add(child);
        grew = true;
      }
    }
  }
  const kib = rows.filter(([child]) => tree.has(child)).reduce((sum, [, , rss]) => sum + rss, 0);
  return Math.round(kib / 1024);
}
