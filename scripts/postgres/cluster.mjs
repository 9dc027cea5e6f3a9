/**
 * Throw-away PostgreSQL clusters for the tests (`npm run test:postgres`):
 *
 * - `installPostgres()`: Debian's `postgresql` package by apt-get when no server is installed
 *   (`/usr/lib/postgresql/<version>/bin/postgres`); a machine may have psql without the server.
 * - `startCluster({ dir })`: `initdb` in a fresh temp dir (under `dir`, by default the system's
 *   temp dir), a server on a free port of 127.0.0.1 only, with its unix socket inside that dir and
 *   settings for data nobody keeps (no fsync). PostgreSQL refuses to run as root: as root, every
 *   server program runs as the `postgres` system user, which owns the dir. A watchdog process stops
 *   the server and deletes the dir if this process dies without calling `stop()`. `restart()` is
 *   `pg_ctl restart -m fast` (every session ended, the server down for a moment), for fault tests.
 * - `createDatabase(url, name, { template })`: `CREATE DATABASE`, returning the new database's URL.
 */
import { spawn, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, appendFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { URL } from "node:url";
import pg from "pg";
import { aptInstall } from "../commands.mjs";

const POSTGRES_ROOT = "/usr/lib/postgresql";
const log = (message) => console.log(`[postgres] ${message}`);
const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0;

/** The newest installed server's bin directory, or undefined. */
export function postgresBinDir() {
  if (!existsSync(POSTGRES_ROOT)) return undefined;
  const versions = readdirSync(POSTGRES_ROOT)
    .filter((name) => existsSync(join(POSTGRES_ROOT, name, "bin", "postgres")))
    .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
  return versions.length > 0 ? join(POSTGRES_ROOT, versions[0], "bin") : undefined;
}

/** Installs Debian's PostgreSQL server when none is installed; returns its bin directory. */
export function installPostgres() {
  const found = postgresBinDir();
  if (found) {
    log(`server: ${found}`);
    return found;
  }
  aptInstall(["postgresql"], {
    missing: "No PostgreSQL server is installed.",
    installed: () => postgresBinDir() !== undefined,
    incomplete: `apt-get installed postgresql but no ${POSTGRES_ROOT}/*/bin/postgres is there`,
    log,
  });
  const installed = postgresBinDir();
  log(`installed: ${installed}`);
  return installed;
}

/** A command line run as the `postgres` system user when this process is root, else as itself. */
function asServerUser(command, args) {
  if (!isRoot()) return [command, args];
  if (existsSync("/usr/sbin/runuser") || existsSync("/sbin/runuser")) return ["runuser", ["-u", "postgres", "--", command, ...args]];
  const quote = (word) => `'${String(word).replaceAll("'", `'\\''`)}'`;
  return ["su", ["postgres", "-s", "/bin/sh", "-c", [command, ...args].map(quote).join(" ")]];
}

function runAsServerUser(command, args, { cwd, quiet = false } = {}) {
  const [program, programArgs] = asServerUser(command, args);
  const result = spawnSync(program, programArgs, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  if (result.status !== 0 && !quiet) {
    throw new Error(`${command} ${args.join(" ")} failed (exit ${result.status ?? result.signal}):\n${result.stdout ?? ""}${result.stderr ?? ""}`);
  }
  return result;
}

/** A TCP port nobody listens on at this moment, on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Stops the server and deletes the dir once `parent` is gone. Runs detached, so it outlives a
 * parent killed by SIGKILL; exits by itself when the dir is deleted (a normal `stop()`).
 */
const WATCHDOG = `
const { spawnSync } = require("node:child_process");
const { existsSync, readFileSync, rmSync } = require("node:fs");
const { parent, dir, stop } = JSON.parse(process.argv[1]);
// A parent killed but not yet reaped is a zombie: kill(pid, 0) still finds it.
const zombie = (pid) => { try { return /^\\d+ \\(.*\\) Z/.test(readFileSync("/proc/" + pid + "/stat", "utf8")); } catch { return false; } };
const alive = (pid) => { try { process.kill(pid, 0); return !zombie(pid); } catch (error) { return error.code === "EPERM"; } };
const timer = setInterval(() => {
  if (!existsSync(dir)) process.exit(0);
  if (alive(parent)) return;
  clearInterval(timer);
  spawnSync(stop[0], stop.slice(1), { stdio: "ignore", cwd: "/" });
  rmSync(dir, { recursive: true, force: true });
}, 1000);
`;

/** Clusters of this process not stopped yet: stopped on exit, whatever the caller forgot. */
const running = new Set();
process.on("exit", () => {
  for (const stop of running) stop();
});

/** Whether the server at `url` answers a query. */
async function accepts(url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Starts a throw-away cluster. `dir`: where its temp dir is made (default: the system's temp dir;
 * as root, the `postgres` user must be able to reach it). Returns `{ url, port, dir, stop() }`.
 */
export async function startCluster({ dir } = {}) {
  const bin = postgresBinDir();
  if (!bin) throw new Error("No PostgreSQL server is installed: call installPostgres() first");
  const parent = dir ?? tmpdir();
  mkdirSync(parent, { recursive: true });
  const root = mkdtempSync(join(parent, "action-service-pg-"));
  const data = join(root, "data");
  const socket = join(root, "socket");
  const logFile = join(root, "server.log");
  mkdirSync(socket);
  if (isRoot()) {
    const id = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const gid = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
    if (id.status !== 0 || gid.status !== 0) {
      rmSync(root, { recursive: true, force: true });
      throw new Error("Running as root, but there is no `postgres` system user to run the server as (install Debian's postgresql package)");
    }
    for (const path of [root, socket]) chownSync(path, Number(id.stdout), Number(gid.stdout));
  }
  const pgCtl = join(bin, "pg_ctl");
  const stopCommand = asServerUser(pgCtl, ["stop", "-D", data, "-m", "fast", "-w", "-t", "30"]);

  let stopped = false;
  let watchdog;
  const stopSync = () => {
    if (stopped) return;
    stopped = true;
    running.delete(stopSync);
    if (existsSync(join(data, "postmaster.pid"))) {
      const result = spawnSync(stopCommand[0], stopCommand[1], { cwd: "/", encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
      if (result.status !== 0) {
        // Not stopped fast: stop it hard, so nothing outlives the dir.
        const immediate = asServerUser(pgCtl, ["stop", "-D", data, "-m", "immediate", "-w"]);
        spawnSync(immediate[0], immediate[1], { cwd: "/", stdio: "ignore" });
      }
    }
    rmSync(root, { recursive: true, force: true });
    if (watchdog?.pid) {
      try {
        process.kill(watchdog.pid);
      } catch {
        // Gone already: it saw the dir deleted.
      }
    }
  };
  running.add(stopSync);

  try {
    runAsServerUser(join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "postgres", "--locale=C", "-E", "UTF8", "--no-sync"], { cwd: root });
    // Data nobody keeps: no waiting for disks. 300 connections: every test file opens pools.
    appendFileSync(
      join(data, "postgresql.conf"),
      [
        "",
        "# scripts/postgres/cluster.mjs: a throw-away cluster for tests",
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${socket}'`,
        "fsync = off",
        "synchronous_commit = off",
        "full_page_writes = off",
        "max_connections = 300",
        "",
      ].join("\n"),
    );
    watchdog = spawn(process.execPath, ["-e", WATCHDOG, JSON.stringify({ parent: process.pid, dir: root, stop: stopCommand.flat() })], {
      detached: true,
      stdio: "ignore",
      cwd: "/",
    });
    watchdog.unref();

    // The port is free when picked; another process may take it before the server binds it.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const started = runAsServerUser(pgCtl, ["start", "-D", data, "-l", logFile, "-w", "-t", "60", "-o", `-p ${port}`], { cwd: root, quiet: true });
      if (started.status === 0) {
        const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
        for (let wait = 0; !(await accepts(url)); wait++) {
          if (wait >= 300) throw new Error(`the server on port ${port} does not accept connections:\n${readLog(logFile)}`);
          await sleep(100);
        }
        log(`cluster on 127.0.0.1:${port} in ${root}`);
        // Not spawnSync: the caller's own connections and timers go on while the server restarts.
        const restart = () =>
          new Promise((resolve, reject) => {
            const [program, args] = asServerUser(pgCtl, ["restart", "-D", data, "-m", "fast", "-w", "-t", "60", "-l", logFile, "-o", `-p ${port}`]);
            const child = spawn(program, args, { cwd: root, stdio: "ignore" });
            child.on("error", reject);
            child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`pg_ctl restart failed (exit ${code}):\n${readLog(logFile)}`))));
          });
        return { url, port, dir: root, stop: async () => stopSync(), restart };
      }
      const serverLog = readLog(logFile);
      if (attempt >= 5 || !/could not bind|address already in use/i.test(serverLog)) {
        throw new Error(`pg_ctl start failed (exit ${started.status ?? started.signal}):\n${started.stdout}${started.stderr}\n${serverLog}`);
      }
      log(`port ${port} was taken meanwhile: trying another`);
    }
  } catch (error) {
    stopSync();
    throw error;
  }
}

function readLog(file) {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-30).join("\n");
  } catch {
    return "(no server log)";
  }
}

const quoteIdentifier = (name) => `"${String(name).replaceAll('"', '""')}"`;

/** `url` with its database replaced by `name`. */
export function databaseUrl(url, name) {
  const result = new URL(url);
  result.pathname = `/${encodeURIComponent(name)}`;
  return result.toString();
}

/**
 * Creates database `name` (a copy of `template` if given) on the server of `url`, connected to
 * its `postgres` database (a template must have no connection while it is copied).
 */
export async function createDatabase(url, name, { template } = {}) {
  const client = new pg.Client({ connectionString: databaseUrl(url, "postgres") });
  client.on("error", () => undefined);
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${quoteIdentifier(name)}${template ? ` TEMPLATE ${quoteIdentifier(template)}` : ""}`);
  } finally {
    await client.end().catch(() => undefined);
  }
  return databaseUrl(url, name);
}
