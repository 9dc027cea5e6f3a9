import { randomBytes } from "node:crypto";
import { pino } from "pino";
import { createApp } from "../../src/api/app.js";
import type { Principal } from "../../src/domain/keys.js";
import { RateLimiter } from "../../src/engine/rate-limit.js";
import { listen } from "../../src/main.js";
import { mountMcpHttp, type McpHttpEndpoint } from "../../src/mcp/http.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor } from "../helpers/scripted-executor.js";
import { readState, type StateSnapshot } from "./state.js";

/** Far above anything a run sends: the security harnesses test access, not the rate limit. */
const UNLIMITED_PER_MINUTE = 1_000_000_000;

/** Accounts whose username starts with this pause their `connect` at needs_input (an email_code challenge). */
const CHALLENGE_PREFIX = "challenge-";

/** The keys a run acts with; `none` sends no Authorization header. */
export interface WorldKeys {
  admin: string;
  operator: string;
  readOnly: string;
  /** Admin of another workspace. */
  otherAdmin: string;
  /** Operator whose allow-list names only `allowedAccountId`. */
  limitedOperator: string;
  /** Admin whose allow-list names only `allowedAccountId`. */
  limitedAdmin: string;
  /** Well-formed (`as_…`) but issued by nobody. */
  bad: string;
}

/** One workspace's ids a request can aim at. */
export interface TargetIds {
  /** An account whose actions run straight through (nothing waits on it). */
  accountId: string;
  /** An action at needs_input (with a challenge and its sign_in_url), on its own account. */
  actionId: string;
  /** The account of `actionId`. */
  actionAccountId: string;
}

/**
 * The service as the security harnesses see it: the real harness (SQLite file, engine,
 * scripted platform) for in-process REST, and the same engine served over real HTTP on
 * 127.0.0.1 with REST and /mcp mounted, as `serve` mounts them.
 */
export interface World {
  h: Harness;
  /** `http://127.0.0.1:<port>` of the served app. */
  origin: string;
  port: number;
  keys: WorldKeys;
  /** The one account the limited keys may use. */
  allowedAccountId: string;
  /** Fresh targets in both workspaces, each action already paused at needs_input. */
  freshTargets(): Promise<{ own: TargetIds; other: TargetIds }>;
  /** A new account: `challenge` ones pause their connect at needs_input, `plain` ones run straight through. */
  newAccount(workspace: "own" | "other", kind: "plain" | "challenge"): string;
  snapshot(): StateSnapshot;
  /** Resolves once no action is running or about to start: nothing changes state in the background. */
  settle(timeoutMs?: number): Promise<void>;
  /** Errors the served app logged (unexpected exceptions: a 500's cause). */
  serverErrors: string[];
  close(): Promise<void>;
}

function challengeScriptedExecutor(): ScriptedExecutor {
  return new ScriptedExecutor().on("connect", async (context) => {
    if (context.account.username.startsWith(CHALLENGE_PREFIX)) {
      await context.challenge({ kind: "email_code", message: "We emailed a code to c***@example.com." });
    }
    return {};
  });
}

export async function createWorld(): Promise<World> {
  const h = createHarness({
    executor: challengeScriptedExecutor(),
    engine: {
      // Every fixture pauses an action at needs_input; plenty of slots and credits keep runs independent of order.
      maxConcurrent: 100_000,
      maxPaused: 100_000,
      freeCredits: 1_000_000_000,
      // No lease renewal during a run: a heartbeat writes the runners table, which would look like a refused request's write.
      // A quick watch, so work started by one request has ended before the next is sent.
      runner: { leaseMs: 24 * 60 * 60 * 1000, heartbeatMs: 60 * 60 * 1000, watchMs: 10 },
    },
    app: { rateLimitPerMinute: UNLIMITED_PER_MINUTE },
  });
  const serverErrors: string[] = [];
  const logger = pino({ level: "error" }, { write: (line: string) => void serverErrors.push(line) });
  const limiter = new RateLimiter(UNLIMITED_PER_MINUTE, h.clock);
  let origin = "http://127.0.0.1";
  let endpoint: McpHttpEndpoint | undefined;
  const app = createApp({
    engine: h.engine,
    clock: h.clock,
    logger,
    limiter,
    extend: (hono) => (endpoint = mountMcpHttp(hono, h.engine, { allowedHosts: ["127.0.0.1"], publicUrl: () => origin, limiter, logger })),
  });
  const server = await listen(app, "127.0.0.1", 0);
  origin = `http://127.0.0.1:${server.port}`;

  const otherAdmin = h.key("admin", { workspace: "other" });
  const ownAdmin = h.engine.authenticate(h.adminKey)!;
  const otherPrincipal = h.engine.authenticate(otherAdmin)!;
  let serial = 0;
  const addAccount = (principal: Principal, kind: "plain" | "challenge"): string =>
    h.engine.createAccount(principal, { platform: "sandbox", username: `${kind === "challenge" ? CHALLENGE_PREFIX : "plain-"}${++serial}`, password: "pw" }).id;
  const allowedAccountId = addAccount(ownAdmin, "plain");

  async function targetsIn(principal: Principal): Promise<TargetIds> {
    const accountId = addAccount(principal, "plain");
    const actionAccountId = addAccount(principal, "challenge");
    const actionId = h.engine.createAction(principal, { account_id: actionAccountId, type: "connect", params: {} }).id;
    await until(() => h.store.actions.get(actionId)?.status === "needs_input", 5_000, `fixture action ${actionId} never reached needs_input`);
    return { accountId, actionId, actionAccountId };
  }

  const world: World = {
    h,
    origin,
    port: server.port,
    keys: {
      admin: h.adminKey,
      operator: h.key("operator"),
      readOnly: h.key("read_only"),
      otherAdmin,
      limitedOperator: h.key("operator", { accountIds: [allowedAccountId] }),
      limitedAdmin: h.key("admin", { accountIds: [allowedAccountId] }),
      bad: `as_${randomBytes(32).toString("base64url")}`,
    },
    allowedAccountId,
    async freshTargets() {
      return { own: await targetsIn(ownAdmin), other: await targetsIn(otherPrincipal) };
    },
    newAccount: (workspace, kind) => addAccount(workspace === "own" ? ownAdmin : otherPrincipal, kind),
    snapshot: () => readState(h.store.db),
    settle: (timeoutMs = 10_000) => until(() => unsettledActions(h) === 0, timeoutMs, "actions still running in the background"),
    serverErrors,
    async close() {
      await endpoint?.close();
      await server.close();
      await h.destroy();
    },
  };
  await world.settle();
  return world;
}

/**
 * Actions that will still write without a request: running ones, and queued ones nothing
 * holds back (an account's actions wait while another of its actions is at needs_input).
 */
function unsettledActions(h: Harness): number {
  return h.store.db
    .prepare(
      `SELECT count(*) FROM actions a
       WHERE a.status = 'running'
          OR (a.status = 'queued' AND NOT EXISTS (SELECT 1 FROM actions b WHERE b.account_id = a.account_id AND b.status = 'needs_input'))`,
    )
    .pluck()
    .get() as number;
}

async function until(check: () => boolean, timeoutMs: number, message: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(message);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
