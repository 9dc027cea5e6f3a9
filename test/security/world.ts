import { randomBytes } from "node:crypto";
import { pino } from "pino";
import { createApp } from "../../src/api/app.js";
import type { Principal } from "../../src/domain/keys.js";
import { RateLimiter } from "../../src/engine/access/index.js";
import { listen } from "../../src/main.js";
import { mountMcpHttp, type McpHttpEndpoint } from "../../src/mcp/http.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { SCRIPTED_PLATFORM, ScriptedExecutor } from "../helpers/scripted-executor.js";
import { eventually } from "../helpers/wait.js";
import { readState, type StateSnapshot } from "./state.js";
import { pausedAtNeedsInput, settled } from "./background.js";

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
  /** A webhook endpoint made by the workspace's admin (no allow-list: it reaches every account), made before the accounts above. */
  webhookId: string;
  /** One of `webhookId`'s deliveries (an event of the accounts or the action above; its one attempt failed). */
  deliveryId: string;
  /** The admin's feedback about `actionId`, with a screenshot kept for that action. */
  feedbackId: string;
  /** The workspace's newest event (a `Last-Event-ID` to resume after). */
  eventId: string;
  /** A succeeded browser_steps action on `accountId`, to save a routine from (`save_routine`). */
  stepsActionId: string;
  /** A routine saved by the workspace's admin (its one step opens the home page). */
  routineName: string;
}

/**
 * Where the fixtures' webhook endpoints point: the discard port on loopback, where nothing listens,
 * so every delivery attempt fails at once and nothing leaves the machine (the world allows private targets).
 */
export const UNREACHABLE_HOOK = "http://127.0.0.1:9/hook";

/** The smallest PNG (1×1, transparent): the screenshot kept for a fixture action. */
const TINY_PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");

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
  newAccount(workspace: "own" | "other", kind: "plain" | "challenge"): Promise<string>;
  snapshot(): Promise<StateSnapshot>;
  /** Resolves once no action is running or about to start, and no webhook delivery is due: nothing changes state in the background. */
  settle(timeoutMs?: number): Promise<void>;
  /** Errors the served app logged (unexpected exceptions: a 500's cause). */
  serverErrors: string[];
  close(): Promise<void>;
}

function challengeScriptedExecutor(): ScriptedExecutor {
  return new ScriptedExecutor()
    .on("connect", async (context) => {
      if (context.account.username.startsWith(CHALLENGE_PREFIX)) {
        await context.challenge({ kind: "email_code", message: "We emailed a code to c***@example.com." });
      }
      return {};
    })
    // What a browser_steps run records of its steps (nothing matched twice): enough to save a routine from.
    .on("browser_steps", async () => ({ steps: [{ index: 0, path: "/" }] }));
}

export async function createWorld(): Promise<World> {
  const h = await createHarness({
    executor: challengeScriptedExecutor(),
    engine: {
      // The scripted platform runs browser_steps too: routines are saved from them.
      platforms: [{ ...SCRIPTED_PLATFORM, actions: [...SCRIPTED_PLATFORM.actions, "browser_steps"] }],
      // Every fixture pauses an action at needs_input; plenty of slots and credits keep runs independent of order.
      maxConcurrent: 100_000,
      maxPaused: 100_000,
      freeCredits: 1_000_000_000,
      // No lease renewal during a run: a heartbeat writes the runners table, which would look like a refused request's write.
      // A quick watch, so work started by one request has ended before the next is sent.
      runner: { leaseMs: 24 * 60 * 60 * 1000, heartbeatMs: 60 * 60 * 1000 },
      // Endpoints on loopback (UNREACHABLE_HOOK): deliveries are attempted, and fail, without leaving the machine.
      // Each is attempted once: its retry is due 5 s later on a fake clock that moves a millisecond per set of fixtures,
      // and every set drops the endpoints (with their deliveries) of the one before.
      webhooks: { allowPrivate: true },
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
    // The harnesses' MCP sessions are opened once and must outlive a whole run, however slow the
    // machine (at the default 10 min idle, a loaded run's REST cases outlasted them).
    extend: (hono) => (endpoint = mountMcpHttp(hono, h.engine, { allowedHosts: ["127.0.0.1"], publicUrl: () => origin, limiter, logger, sessionIdleMs: 24 * 60 * 60 * 1000 })),
  });
  const server = await listen(app, "127.0.0.1", 0);
  origin = `http://127.0.0.1:${server.port}`;

  const otherAdmin = await h.key("admin", { workspace: "other" });
  const ownAdmin = (await h.engine.keys.authenticate(h.adminKey))!;
  const otherPrincipal = (await h.engine.keys.authenticate(otherAdmin))!;
  let serial = 0;
  // A plain account is connected (a session to check, DESIGN §16), as its first connect would leave it.
  const addAccount = async (principal: Principal, kind: "plain" | "challenge"): Promise<string> => {
    const { id } = await h.engine.accounts.create(principal, { platform: "sandbox", username: `${kind === "challenge" ? CHALLENGE_PREFIX : "plain-"}${++serial}`, password: "pw" });
    if (kind === "plain") await h.store.accounts.update(id, { status: "connected" }, new Date().toISOString());
    return id;
  };
  const allowedAccountId = await addAccount(ownAdmin, "plain");

  async function targetsIn(principal: Principal): Promise<TargetIds> {
    // The endpoint first, so the events of what follows are fanned out to it.
    const webhookId = (await h.engine.webhooks.create(principal, { url: UNREACHABLE_HOOK })).id;
    const accountId = await addAccount(principal, "plain");
    const actionAccountId = await addAccount(principal, "challenge");
    const actionId = (await h.engine.createAction(principal, { account_id: actionAccountId, type: "connect", params: {} })).id;
    await pausedAtNeedsInput(h, actionId);
    const deliveryId = (await h.store.webhooks.deliveries(webhookId, 1))[0]?.id;
    if (!deliveryId) throw new Error(`fixture endpoint ${webhookId} got no delivery`);
    // A moment passes, so this feedback is the newest (lists are newest first, and the clock stands still otherwise).
    h.clock.advance(1);
    await h.store.transaction(async () => h.store.feedback.saveScreenshot(actionId, TINY_PNG, h.clock.now().toISOString()));
    const feedbackId = (await h.engine.feedback.send(principal, { message: `fixture feedback ${++serial}`, action_id: actionId })).id;
    const stepsActionId = (await h.engine.createAction(principal, { account_id: accountId, type: "browser_steps", params: { steps: [{ goto: "/" }] } })).id;
    await eventually(async () => (await h.store.actions.get(stepsActionId))?.status === "succeeded", { what: `fixture browser_steps action ${stepsActionId} to succeed` });
    const routineName = `fixture_${++serial}_${principal.workspaceId === ownAdmin.workspaceId ? "own" : "other"}`;
    await h.engine.routines.create(principal, { platform: "sandbox", name: routineName, description: "Opens the home page.", params: { type: "object", properties: {} }, steps: [{ goto: "/" }] });
    const eventId = (await h.store.events.newest(principal.workspaceId))!.id;
    return { accountId, actionId, actionAccountId, webhookId, deliveryId, feedbackId, eventId, stepsActionId, routineName };
  }

  /**
   * Deletes every webhook endpoint (fixtures and whatever requests made): each event is fanned out
   * to every endpoint of its workspace, so endpoints left from earlier targets would multiply the
   * deliveries of every later event.
   */
  async function dropWebhooks(): Promise<void> {
    await h.store.transaction(async () => {
      for (const principal of [ownAdmin, otherPrincipal]) for (const endpoint of await h.store.webhooks.endpoints(principal.workspaceId)) await h.store.webhooks.deleteEndpoint(endpoint.id);
    });
  }

  const world: World = {
    h,
    origin,
    port: server.port,
    keys: {
      admin: h.adminKey,
      operator: await h.key("operator"),
      readOnly: await h.key("read_only"),
      otherAdmin,
      limitedOperator: await h.key("operator", { accountIds: [allowedAccountId] }),
      limitedAdmin: await h.key("admin", { accountIds: [allowedAccountId] }),
      bad: `as_${randomBytes(32).toString("base64url")}`,
    },
    allowedAccountId,
    async freshTargets() {
      await world.settle();
      await dropWebhooks();
      // Both workspaces at once: most of the making is waiting for each action to pause.
      const [own, other] = await Promise.all([targetsIn(ownAdmin), targetsIn(otherPrincipal)]);
      const targets = { own, other };
      // The fixtures' own deliveries are attempted in the background: done before a request is judged.
      await world.settle();
      return targets;
    },
    newAccount: async (workspace, kind) => addAccount(workspace === "own" ? ownAdmin : otherPrincipal, kind),
    snapshot: () => readState(h.store),
    settle: (timeoutMs) => settled(h, timeoutMs),
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
