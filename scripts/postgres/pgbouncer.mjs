/**
 * A throw-away PgBouncer in front of a test cluster (`npm run test:postgres`, DESIGN §11: "PgBouncer
 * in transaction mode may stand between coordinators and PostgreSQL"):
 *
 * - `installPgbouncer()`: Debian's `pgbouncer` package by apt-get when it is missing.
 * - `startPgbouncer(serverUrl)`: a PgBouncer in **transaction** pooling mode on a free port of
 *   127.0.0.1, every database name passed through to the server of `serverUrl` (each test's fresh
 *   database included), logging in as that URL's user. Its own limits are left at PgBouncer's
 *   defaults: whatever holds the session limits must be the service's doing, not the test's. As
 *   root it runs as the `postgres` system user (PgBouncer refuses root). A watchdog stops it if
 *   this process dies without calling `stop()`.
 */
import { spawn, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { URL } from "node:url";
import { aptInstall } from "../commands.mjs";
import { freePort } from "./cluster.mjs";

const PGBOUNCER = "/usr/sbin/pgbouncer";
const log = (message) => console.log(`[pgbouncer] ${message}`);
const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0;

/** Installs Debian's PgBouncer when it is missing. */
export function installPgbouncer() {
  if (existsSync(PGBOUNCER)) return;
  aptInstall(["pgbouncer"], {
    missing: "PgBouncer is not installed.",
    installed: () => existsSync(PGBOUNCER),
    incomplete: `apt-get installed pgbouncer but there is no ${PGBOUNCER}`,
    log,
  });
}

function listening(port) {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.on("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });
}

/** Kills `pid` and deletes `dir` once `parent` is gone (detached: it outlives a parent killed by SIGKILL). */
const WATCHDOG = `
const { existsSync, rmSync } = require("node:fs");
const { parent, pid, dir } = JSON.parse(process.argv[1]);
const alive = (p) => { try { process.kill(p, 0); return true; } catch (error) { return error.code === "EPERM"; } };
const timer = setInterval(() => {
  if (!existsSync(dir) || !alive(pid)) process.exit(0);
  if (alive(parent)) return;
  clearInterval(timer);
  try { process.kill(pid, "SIGKILL"); } catch {}
  rmSync(dir, { recursive: true, force: true });
}, 1000);
`;

/**
 * Starts PgBouncer before the server of `serverUrl`. Returns `{ port, url(databaseUrl), stop() }`:
 * `url()` is a database URL of that server rewritten to go through PgBouncer.
 */
export async function startPgbouncer(serverUrl) {
  const server = new URL(serverUrl);
  const dir = mkdtempSync(join(tmpdir(), "action-service-pgbouncer-"));
  const asPostgres = isRoot();
  if (asPostgres) {
    const uid = Number(spawnSync("id", ["-u", "postgres"], { encoding: "utf8" }).stdout);
    const gid = Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout);
    chownSync(dir, uid, gid);
  }
  const logFile = join(dir, "pgbouncer.log");
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const config = join(dir, "pgbouncer.ini");
    writeFileSync(
      config,
      [
        "[databases]",
        // Any database name: the same name on the test cluster, logged in as its user.
        `* = host=${server.hostname} port=${server.port} user=${decodeURIComponent(server.username) || "postgres"}`,
        "[pgbouncer]",
        "listen_addr = 127.0.0.1",
        `listen_port = ${port}`,
        "unix_socket_dir =",
        "auth_type = any",
        "pool_mode = transaction",
        "max_client_conn = 1000",
        "default_pool_size = 20",
        `logfile = ${logFile}`,
        "",
      ].join("\n"),
    );
    const args = asPostgres ? ["-u", "postgres", config] : [config];
    const child = spawn(PGBOUNCER, args, { cwd: dir, stdio: "ignore" });
    let exited = false;
    child.on("exit", () => (exited = true));
    for (let wait = 0; wait < 100 && !exited && !(await listening(port)); wait++) await sleep(50);
    if (!exited && (await listening(port))) {
      const watchdog = spawn(process.execPath, ["-e", WATCHDOG, JSON.stringify({ parent: process.pid, pid: child.pid, dir })], { detached: true, stdio: "ignore", cwd: "/" });
      watchdog.unref();
      log(`transaction pooling on 127.0.0.1:${port} before ${server.host}`);
      return {
        port,
        url(databaseUrl) {
          const through = new URL(databaseUrl);
          through.hostname = "127.0.0.1";
          through.port = String(port);
          return through.toString();
        },
        async stop() {
          if (!exited) {
            const gone = new Promise((resolve) => child.once("exit", resolve));
            child.kill("SIGTERM");
            await Promise.race([gone, sleep(5_000)]);
            if (!exited) child.kill("SIGKILL");
          }
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    child.kill("SIGKILL");
    const said = existsSync(logFile) ? readFileSync(logFile, "utf8").split("\n").slice(-20).join("\n") : "(no log)";
    if (attempt >= 5 || !/Address already in use/i.test(said)) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`pgbouncer did not start listening on port ${port}:\n${said}`);
    }
  }
}
