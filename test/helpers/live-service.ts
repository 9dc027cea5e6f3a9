import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig, type Config } from "../../src/config.js";
import type { Clock } from "../../src/engine/clock.js";
import type { Driver } from "../../src/platforms/driver.js";
import { createLogger, silentLogger } from "../../src/engine/logger.js";
import { dkimRecord, generateDkimKey, startSandbox, type RunningSandbox } from "../../src/sandbox/index.js";
import { startServer, type RunningServer, type ServerOptions } from "../../src/server.js";
import { startLocalDns } from "./dns.js";
import { freePort } from "./processes.js";
import { eventually } from "./wait.js";

/** A real service (real Chromium, real SQLite, real HTTP on 127.0.0.1) against a real sandbox. */
export interface LiveService {
  server: RunningServer;
  sandbox: RunningSandbox;
  config: Config;
  url: string;
  key: string;
  api(method: string, path: string, body?: unknown, options?: { key?: string; headers?: Record<string, string> }): Promise<{ status: number; json: any; headers: Headers }>;
  /** Adds an account for a sandbox user and returns its id. */
  account(username: string, extra?: { password?: string; totp_secret?: string; platform?: string }): Promise<string>;
  /** Runs an action and waits until it is needs_input or ended. */
  run(accountId: string, type: string, params?: Record<string, unknown>, headers?: Record<string, string>): Promise<any>;
  /** Waits until the action is needs_input or ended. */
  wait(actionId: string): Promise<any>;
  /** Waits until the action has ended (succeeded, failed or canceled), through any pause. */
  finished(actionId: string, timeoutMs?: number): Promise<any>;
  sandboxApi(method: string, path: string, body?: unknown): Promise<any>;
  /**
   * Creates a sandbox user no other test uses (password `sandbox-password`) and returns its handle;
   * `extra` holds more control-API fields (`messaging`, `security_question`, `security_answer`).
   */
  user(challenge: SandboxChallenge, extra?: Record<string, unknown>): Promise<string>;
  /**
   * An account and its sandbox user (`inbox: true`), created in that order: the user's `email` and
   * `sms_url` are the account's inbox, so the codes the sandbox sends arrive there by themselves.
   */
  inboxUser(challenge: "email" | "sms" | "magic_link", extra?: { password?: string; totp_secret?: string; platform?: string }): Promise<InboxUser>;
  /** The newest code the sandbox sent the user (e-mail or text message). */
  latestCode(handle: string): Promise<string>;
  /** Every status the action went through in this process, in order, with when it was seen. */
  history(actionId: string): { status: string; at: number }[];
  /** Polls `check` every `everyMs` (50) until it holds; throws after `timeoutMs` (10 s). Poll a key's API slower than its rate limit. */
  until(check: () => boolean | Promise<boolean>, timeoutMs?: number, everyMs?: number): Promise<void>;
  /** Stops the service (keeping data dir and sandbox) and starts it again on the same data. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export type SandboxChallenge = "none" | "totp" | "email" | "sms" | "device" | "captcha" | "question" | "checkpoint" | "magic_link";

export interface LiveServiceOptions {
  env?: Record<string, string>;
  server?: Partial<ServerOptions>;
  /**
   * The inbox (DESIGN §15): the service's SMTP listener on a free port, and the sandbox mailing its
   * codes and sign-in links to it (`SANDBOX_SMTP_URL`), DKIM-signed with a fresh key that a DNS
   * server on 127.0.0.1 publishes (`ACTION_SERVICE_DNS_SERVERS`). See `inboxUser`.
   */
  inbox?: boolean;
  /**
   * One clock for the platform and the service (the sandbox's sessions, codes and TOTP steps, the
   * service's timestamps, schedules and TOTP codes), e.g. an `OffsetClock` a test moves forward
   * to reach an interval's end; runner leases stay on the process's own clock. Default: real time.
   */
  clock?: Clock;
  /** Drivers beside the built-in ones whose platforms are the sandbox (e.g. its declared driver), enabled at its address. */
  sandboxDrivers?: readonly Driver[];
}

/** A sandbox user whose e-mail and SMS URL are its account's inbox. */
export interface InboxUser {
  handle: string;
  accountId: string;
  inbox: { email: string; sms_url: string };
}

export async function startLiveService(options: LiveServiceOptions = {}): Promise<LiveService> {
  const smtpPort = options.inbox ? await freePort() : undefined;
  // The sandbox's mails vouch for themselves as a platform's do: signed, the key published in DNS.
  const dns = options.inbox ? await startLocalDns() : undefined;
  const dkim = options.inbox ? generateDkimKey() : undefined;
  if (dns && dkim) {
    const record = dkimRecord(dkim);
    dns.set(record.name, record.value);
  }
  const { clock } = options;
  const sandbox = await startSandbox({ port: 0, ...(smtpPort ? { smtpUrl: `smtp://127.0.0.1:${smtpPort}`, dkim } : {}), ...(clock ? { clock: () => clock.now() } : {}) });
  const dataDir = mkdtempSync(join(tmpdir(), "action-service-live-"));
  const config = loadConfig({
    ACTION_SERVICE_DATA_DIR: dataDir,
    // Below the ephemeral range (`freePort`): `restart()` listens on it again, and a port from that
    // range may have become an outgoing connection's meanwhile (EADDRINUSE, seen in CI).
    ACTION_SERVICE_PORT: String(await freePort()),
    SANDBOX_URL: sandbox.url,
    ACTION_SERVICE_LOG_LEVEL: "silent",
    ...(smtpPort ? { ACTION_SERVICE_SMTP_PORT: String(smtpPort) } : {}),
    ...(dns ? { ACTION_SERVICE_DNS_SERVERS: dns.address } : {}),
    ...(process.env.BROWSER_EXECUTABLE_PATH ? { BROWSER_EXECUTABLE_PATH: process.env.BROWSER_EXECUTABLE_PATH } : {}),
    ...(options.sandboxDrivers ? { ACTION_SERVICE_PLATFORMS: options.sandboxDrivers.map((driver) => `${driver.platform.name}=${sandbox.url}`).join(",") } : {}),
    ...options.env,
  });
  const histories = new Map<string, { status: string; at: number }[]>();
  // Status changes are recorded as they commit, so a test can tell a pause that lasted a moment from none.
  const record = (running: RunningServer): void => {
    running.service.engine.core.lifecycle.events.on("change", (action) => {
      const seen = histories.get(action.id) ?? [];
      if (seen.at(-1)?.status !== action.status) seen.push({ status: action.status, at: Date.now() });
      histories.set(action.id, seen);
    });
  };
  // Silent unless asked (ACTION_SERVICE_TEST_LOG_LEVEL=warn), e.g. to see why a benchmark's action failed.
  const logger = process.env.ACTION_SERVICE_TEST_LOG_LEVEL ? createLogger(process.env.ACTION_SERVICE_TEST_LOG_LEVEL) : silentLogger;
  const serverOptions: ServerOptions = { logger, ...(clock ? { clock } : {}), ...(options.sandboxDrivers ? { drivers: options.sandboxDrivers } : {}), ...options.server };
  let server = await startServer(config, serverOptions);
  record(server);
  const key = server.service.firstKey!.key;
  let users = 0;
  /** A handle no other test uses. */
  const newHandle = (challenge: string): string => {
    users += 1;
    return `${challenge.slice(0, 4)}_${process.pid.toString(36)}${Date.now().toString(36)}${users}`.slice(0, 30);
  };
  const createSandboxUser = async (handle: string, challenge: SandboxChallenge, extra: Record<string, unknown>): Promise<void> => {
    const created = await fetch(`${sandbox.url}/_sandbox/users`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ handle, name: `Test ${handle}`, password: "sandbox-password", challenge, ...extra }),
    });
    if (created.status !== 201) throw new Error(`sandbox user: ${created.status} ${await created.text()}`);
  };
  const live: LiveService = {
    get server() {
      return server;
    },
    sandbox,
    config,
    get url() {
      return server.url!;
    },
    key,
    async api(method, path, body, { key: override, headers = {} } = {}) {
      const response = await fetch(server.url + path, {
        method,
        headers: { authorization: `Bearer ${override ?? key}`, "content-type": "application/json", ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, json: text ? JSON.parse(text) : undefined, headers: response.headers };
    },
    async account(username, extra = {}) {
      const response = await live.api("POST", "/v1/accounts", { platform: "sandbox", username, password: "sandbox-password", ...extra });
      if (response.status !== 201) throw new Error(`account: ${response.status} ${JSON.stringify(response.json)}`);
      return response.json.id;
    },
    async run(accountId, type, params = {}, headers = {}) {
      const created = await live.api("POST", "/v1/actions?wait=30", { account_id: accountId, type, params }, { headers });
      return live.wait(created.json.id);
    },
    async wait(actionId) {
      for (;;) {
        const response = await live.api("GET", `/v1/actions/${actionId}?wait=30`);
        if (response.json.status !== "queued" && response.json.status !== "running") return response.json;
      }
    },
    async finished(actionId, timeoutMs = 45_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const response = await live.api("GET", `/v1/actions/${actionId}?wait=1`);
        if (["succeeded", "failed", "canceled"].includes(response.json.status)) return response.json;
        if (Date.now() > deadline) throw new Error(`action ${actionId} still ${response.json.status} after ${timeoutMs} ms`);
        // ?wait returns at once while the action is needs_input: poll gently.
        if (response.json.status === "needs_input") await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async sandboxApi(method, path, body) {
      const response = await fetch(sandbox.url + path, {
        method,
        headers: { "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return text ? JSON.parse(text) : undefined;
    },
    async user(challenge, extra = {}) {
      const handle = newHandle(challenge);
      await createSandboxUser(handle, challenge, extra);
      return handle;
    },
    async inboxUser(challenge, extra = {}) {
      const handle = newHandle(challenge);
      const accountId = await live.account(handle, extra);
      const { inbox } = (await live.api("GET", `/v1/accounts/${accountId}`)).json as { inbox: InboxUser["inbox"] };
      await createSandboxUser(handle, challenge, { email: inbox.email, sms_url: inbox.sms_url });
      return { handle, accountId, inbox };
    },
    async latestCode(handle) {
      const outbox = await live.sandboxApi("GET", `/_sandbox/outbox?to=${handle}`);
      const code: unknown = outbox?.[0]?.code;
      if (typeof code !== "string") throw new Error(`no code was sent to ${handle}`);
      return code;
    },
    history(actionId) {
      return [...(histories.get(actionId) ?? [])];
    },
    async until(check, timeoutMs = 10_000, everyMs = 50) {
      await eventually(check, { timeoutMs, everyMs });
    },
    async restart() {
      await server.close();
      server = await startServer({ ...config, port: Number(new URL(server.url!).port) }, serverOptions);
      record(server);
    },
    async close() {
      await server.close();
      await sandbox.close();
      await dns?.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return live;
}
