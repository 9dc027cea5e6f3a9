import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { PostgresReader, createSandboxUser, sandboxSettings, sleep, startSandboxProcess, startServeProcess, within, type ChildExit, type CliProcess } from "../chaos/kill-support.js";
import { freshDatabase, templateDatabaseUrl } from "../helpers/database.js";
import { fakeTimeLibrary } from "../helpers/fake-time.js";
import { freePort } from "../helpers/processes.js";
import { PostgresProxy } from "./proxy.js";

/** A coordinator of the fleet: a `serve` with its own data dir (its own machine), reaching PostgreSQL only through its own proxy. */
export interface Member {
  label: string;
  port: number;
  url: string;
  proxy: PostgresProxy;
  proc: CliProcess & { firstKey: string | undefined };
  logFile: string;
  /** How it ended without being told to (a crash: a broken promise of DESIGN §11), if it did. */
  diedOnItsOwn: ChildExit | undefined;
  alive(): boolean;
  /** kill -9, as a crash: no cleanup. */
  kill(): Promise<void>;
}

export interface MemberPlan {
  label: string;
  /** Runs under libfaketime this far from the machine's clock (`+40s`, `-40s`): Node and its Chromium both. */
  clockOffset?: string;
}

/** Three (or more) coordinators on a fresh database of the suite's cluster, a sandbox, and readers of both. */
export interface Fleet {
  dir: string;
  sandbox: CliProcess;
  /** The database itself, not through any proxy. */
  databaseUrl: string;
  /** A reader of the database (reopened by `reconnect()`, e.g. after PostgreSQL restarted). */
  readonly store: PostgresReader;
  reconnect(): Promise<void>;
  members: Member[];
  member(label: string): Member;
  key: string;
  headers(extra?: Record<string, string>): Record<string, string>;
  /** Sandbox users connected as accounts (made through the members in turn). */
  accounts(count: number): Promise<{ handle: string; id: string }[]>;
  /** Runner id → the member it was (read from the runners table every 200 ms while the fleet runs: a runner that lost its lease registers again). */
  runners: Map<string, string>;
  stop(): Promise<void>;
}

const SERVE_ENV = {
  ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "1000000",
  ACTION_SERVICE_FREE_CREDITS: "1000000",
};

function clockEnv(offset: string | undefined): Record<string, string> {
  if (!offset) return {};
  // What `faketime -f '+40s' node …` sets; set here so the helpers' own spawn is used.
  return { LD_PRELOAD: fakeTimeLibrary(), FAKETIME: offset, FAKETIME_DONT_RESET: "1" };
}

/**
 * Starts a fleet: a sandbox, a fresh database made from the suite's template, a proxy per member
 * to the cluster, and the members (the first prints the admin key; the others start at once).
 */
export async function startFleet(name: string, plans: MemberPlan[], options: { databaseUrl?: string } = {}): Promise<Fleet> {
  const dir = mkdtempSync(join(tmpdir(), `action-service-faults-${name}-`));
  const databaseUrl = options.databaseUrl ?? (await freshDatabase(templateDatabaseUrl()));
  const target = new URL(databaseUrl);
  const sandbox = await startSandboxProcess(join(dir, "sandbox.log"));
  let store = await PostgresReader.open(databaseUrl);
  const masterKey = randomBytes(32).toString("hex");
  const members: Member[] = [];
  const stopping = new Set<number>();
  let watching = true;
  const start = async (plan: MemberPlan): Promise<Member> => {
    const proxy = await PostgresProxy.start({ host: target.hostname, port: Number(target.port) });
    const port = await freePort();
    const logFile = join(dir, `serve-${plan.label}.log`);
    const env = { ...SERVE_ENV, ACTION_SERVICE_DATABASE_URL: proxy.url(databaseUrl), ACTION_SERVICE_MASTER_KEY: masterKey, ...clockEnv(plan.clockOffset) };
    const proc = await startServeProcess({ dataDir: join(dir, `data-${plan.label}`), port, sandboxUrl: sandbox.url, logFile, env });
    const member: Member = {
      label: plan.label,
      port,
      url: proc.url,
      proxy,
      proc,
      logFile,
      diedOnItsOwn: undefined,
      alive: () => proc.child.exitCode === null && proc.child.signalCode === null,
      async kill() {
        stopping.add(proc.pid);
        proc.child.kill("SIGKILL");
        await proc.exited;
      },
    };
    void proc.exited.then((exit) => {
      if (!stopping.has(proc.pid)) member.diedOnItsOwn = exit;
    });
    return member;
  };
  const runners = new Map<string, string>();
  const noteRunners = async (): Promise<void> => {
    for (const row of await store.all<{ id: string; public_url: string | null }>("SELECT id, public_url FROM runners")) {
      const port = row.public_url ? Number(new URL(row.public_url).port) : undefined;
      const member = members.find((candidate) => candidate.port === port);
      if (member) runners.set(row.id, member.label);
    }
  };
  const watcher = (async () => {
    while (watching) {
      await noteRunners().catch(() => undefined);
      await sleep(200);
    }
  })();
  const stop = async (): Promise<void> => {
    watching = false;
    await watcher;
    await Promise.all(
      members.map(async (member) => {
        member.proxy.thaw();
        if (!member.alive()) return;
        stopping.add(member.proc.pid);
        member.proc.child.kill("SIGCONT");
        member.proc.child.kill("SIGKILL");
        await member.proc.exited;
      }),
    );
    await Promise.all(members.map((member) => member.proxy.close()));
    sandbox.child.kill("SIGKILL");
    await within(sandbox.exited, 10_000);
    await store.close();
    if (!process.env.ACTION_SERVICE_FAULTS_KEEP) rmSync(dir, { recursive: true, force: true });
  };
  try {
    members.push(await start(plans[0]!));
    members.push(...(await Promise.all(plans.slice(1).map(start))));
  } catch (error) {
    await stop();
    throw error;
  }
  const key = members[0]!.proc.firstKey;
  if (!key) {
    await stop();
    throw new Error(`the first coordinator printed no admin key: ${members[0]!.proc.output().slice(-2000)}`);
  }
  const headers = (extra: Record<string, string> = {}): Record<string, string> => ({ authorization: `Bearer ${key}`, "content-type": "application/json", ...extra });
  const run = randomBytes(4).toString("hex");
  let made = 0;
  return {
    dir,
    sandbox,
    databaseUrl,
    get store() {
      return store;
    },
    async reconnect() {
      await store.close();
      store = await PostgresReader.open(databaseUrl);
    },
    members,
    member: (label) => members.find((member) => member.label === label) ?? raise(`no member ${label}`),
    key,
    headers,
    runners,
    async accounts(count) {
      const accounts: { handle: string; id: string }[] = [];
      for (let i = 0; i < count; i++) {
        const handle = `f${run}${made++}`;
        await createSandboxUser(sandbox.url, handle);
        const via = members[i % members.length]!;
        const response = await fetch(`${via.url}/v1/accounts`, { method: "POST", headers: headers(), body: JSON.stringify({ platform: "sandbox", username: handle, password: "sandbox-password" }) });
        if (response.status !== 201) throw new Error(`account ${handle}: ${response.status} ${await response.text()}`);
        accounts.push({ handle, id: ((await response.json()) as { id: string }).id });
      }
      return accounts;
    },
    stop,
  };
}

/** Widens the window between an action's commit point and its end (every form POST to the sandbox answers this late). */
export function slowPlatform(fleet: Fleet, ms: number): Promise<void> {
  return sandboxSettings(fleet.sandbox.url, { response_delay_ms: ms });
}

function raise(message: string): never {
  throw new Error(message);
}

/** A throw-away cluster of its own (scripts/postgres/cluster.mjs), for a scenario whose fault hits the whole server. */
export interface OwnCluster {
  url: string;
  /** Its temp dir: the data dir is `data/` in it, the server's log `server.log`. */
  dir: string;
  binDir: string;
  stop(): Promise<void>;
}

interface ClusterModule {
  postgresBinDir(): string | undefined;
  startCluster(options?: { dir?: string }): Promise<{ url: string; dir: string; stop(): Promise<void> }>;
  createDatabase(url: string, name: string): Promise<string>;
}

/** Starts a cluster of its own (the suite's runner has installed the server) with an empty database `action_service` on it. */
export async function startOwnCluster(): Promise<OwnCluster & { databaseUrl: string }> {
  const module = pathToFileURL(join(import.meta.dirname, "..", "..", "scripts", "postgres", "cluster.mjs")).href;
  const clusters = (await import(module)) as ClusterModule;
  const cluster = await clusters.startCluster();
  return { ...cluster, binDir: clusters.postgresBinDir()!, databaseUrl: await clusters.createDatabase(cluster.url, "action_service") };
}
