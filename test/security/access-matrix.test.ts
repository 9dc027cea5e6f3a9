import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTES } from "../../src/api/routes/index.js";
import { TOOLS } from "../../src/mcp/tools/index.js";
import { PERMISSION_OF, PRINCIPALS, expectedOutcome, type Outcome, type PrincipalSpec, type TargetSpec } from "./access-rule.js";
import { jsonOrUndefined } from "../helpers/harness.js";
import { OPERATIONS, hiddenIds, idsFor, restCall, restName, targetsOf, toolArguments, type Operation, type RestCall } from "./matrix-operations.js";
import { SEED_REQUEST_ERRORS } from "./seed-errors.js";
import { stateDifference, type StateSnapshot } from "./state.js";
import { pausedAtNeedsInput } from "./background.js";
import { UNREACHABLE_HOOK, createWorld, type World } from "./world.js";

let world: World;
const clients = new Map<string, Client>();
const tally = { planned: 0, run: 0, passed: 0 };
let serial = 0;

beforeAll(async () => {
  world = await createWorld();
  for (const principal of PRINCIPALS.filter((candidate) => candidate.role)) clients.set(principal.name, await mcpClient(keyOf(principal)!));
});

afterAll(async () => {
  console.log(
    `access matrix: ${tally.run} of ${tally.planned} cases run, ${tally.passed} passed (${((100 * tally.passed) / Math.max(1, tally.run)).toFixed(1)} %)`,
  );
  for (const client of clients.values()) await client.close();
  await world?.close();
  expect(tally.run, "every planned case ran").toBe(tally.planned);
  expect(tally.passed, "every case passed").toBe(tally.run);
});

function keyOf(principal: PrincipalSpec): string | undefined {
  return principal.key === "none" ? undefined : world.keys[principal.key];
}

async function mcpClient(key: string): Promise<Client> {
  const client = new Client({ name: "access-matrix", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${world.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

function describeOutcome(outcome: Outcome): string {
  return outcome.ok ? "allowed" : `${SEED_REQUEST_ERRORS[outcome.code]} ${outcome.code}`;
}

/** Registers one case; it counts as passed only once every assertion in it has held. */
function matrixCase(title: string, body: () => Promise<void>): void {
  tally.planned += 1;
  it(title, async () => {
    tally.run += 1;
    await body();
    tally.passed += 1;
  });
}

/** Nothing in a refusal leads anywhere: no live link, no id the caller did not send and may not see. */
function expectNothingLeaks(text: string, hidden: readonly string[], refused: boolean): void {
  for (const id of hidden) expect(text, `leaks ${id}`).not.toContain(id);
  if (refused) {
    expect(text).not.toContain("sign_in_url");
    expect(text).not.toContain("/live/");
  }
}

/** How long an event stream may take to send what is awaited: far above a loaded machine's milliseconds, below a case's 60 s. */
const STREAM_WAIT_MS = 30_000;

interface MatrixResponse {
  status: number;
  headers: Headers;
  raw: string;
  json: any;
}

/**
 * One REST request, in process. An event stream (`text/event-stream`) never ends by itself: it
 * is read until what it sent satisfies `until` (by default, its first bytes), then the request
 * is aborted, as a client going away would.
 */
async function restRequest(call: RestCall, key: string | undefined, options: { headers?: Record<string, string>; until?: (raw: string) => boolean } = {}): Promise<MatrixResponse> {
  const abort = new AbortController();
  const response = await world.h.app.request(call.path, {
    method: call.method,
    headers: { ...(key === undefined ? {} : { authorization: `Bearer ${key}` }), ...(call.body === undefined ? {} : { "content-type": "application/json" }), ...options.headers },
    ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
    signal: abort.signal,
  });
  if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    const raw = await response.text();
    return { status: response.status, headers: response.headers, raw, json: jsonOrUndefined(raw) };
  }
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const deadline = Date.now() + STREAM_WAIT_MS;
  const enough = options.until ?? ((sent: string) => sent.length > 0);
  let raw = "";
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    const chunk = await Promise.race([reader.read(), new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), left))]);
    if (!chunk || chunk.done) break;
    raw += decoder.decode(chunk.value, { stream: true });
    if (enough(raw)) break;
  }
  abort.abort();
  await reader.cancel().catch(() => undefined);
  return { status: response.status, headers: response.headers, raw, json: undefined };
}

type Targets = Awaited<ReturnType<World["freshTargets"]>>;

/** The targets made last and the state just after; undefined once a request that may write was sent at them. */
let unspent: { targets: Targets; state: StateSnapshot } | undefined;

/**
 * The targets a case aims at, and the state before its request. Making them is most of a case's
 * cost, so the last ones are aimed at again while they are as made: no request since may have
 * written (each was refused, and held to have written nothing) and the state is the one they
 * were made in. Otherwise fresh ones are made.
 */
async function targetsForCase(): Promise<{ fresh: Targets; before: StateSnapshot }> {
  if (unspent) {
    await world.settle();
    const before = await world.snapshot();
    if (stateDifference(unspent.state, before).length === 0) return { fresh: unspent.targets, before };
  }
  const fresh = await world.freshTargets();
  const before = await world.snapshot();
  unspent = { targets: fresh, state: before };
  return { fresh, before };
}

/** Runs one operation for one principal on one target, then holds it to the rule. */
async function runCase(principal: PrincipalSpec, operation: Operation, target: TargetSpec): Promise<void> {
  const { fresh, before } = await targetsForCase();
  const ids = idsFor(target, fresh, ++serial);
  const expected = expectedOutcome(principal, operation, target);
  const hidden = hiddenIds(principal, fresh, ids);
  // An allowed request may change the targets (cancel the action, delete the account) or write where the state does not look.
  if (expected.ok) unspent = undefined;
  let text: string;
  if (operation.surface === "rest") {
    const call = restCall(operation.route, ids, serial);
    const response = await restRequest(call, keyOf(principal));
    text = response.raw;
    if (expected.ok) {
      // Allowed: one of the route's documented outcomes other than a refusal of the caller (402 is x402's "pay first").
      const documented = Object.keys(operation.route.responses).map(Number).filter((status) => status < 400 || status === 402 || status >= 500);
      expect(documented, response.raw).toContain(response.status);
      if ((response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
        expect(response.raw, "an event stream's first bytes are SSE lines").toMatch(/^(:|id:|event:|data:|retry:)/);
      }
    } else {
      expect(response.status, response.raw).toBe(SEED_REQUEST_ERRORS[expected.code]);
      expect(response.json?.error?.code).toBe(expected.code);
    }
    expectNothingLeaks(response.raw, hidden, !expected.ok);
  } else {
    const result = (await clients.get(principal.name)!.callTool({ name: operation.tool.name, arguments: toolArguments(operation.tool, ids, serial) })) as CallToolResult;
    text = JSON.stringify(result);
    const said = result.content.map((block) => (block.type === "text" ? block.text : "")).join("\n");
    if (expected.ok) expect(result.isError, said).toBeFalsy();
    else {
      expect(result.isError, said).toBe(true);
      expect(said).toMatch(new RegExp(`^${expected.code}: `));
    }
    expectNothingLeaks(text, hidden, !expected.ok);
  }
  if (!expected.ok) expect(stateDifference(before, (await world.snapshot())), "a refused request changed state").toEqual([]);
  await world.settle();
}

describe("the access matrix covers every route and tool", () => {
  it("states the permission of each route and tool, and of nothing else", () => {
    const names = [...ROUTES.map(restName), ...TOOLS.map((tool) => tool.name)];
    expect(Object.keys(PERMISSION_OF).sort()).toEqual([...names].sort());
  });
});

for (const operation of OPERATIONS) {
  describe(`${operation.surface === "rest" ? "REST" : "MCP"} ${operation.name}`, () => {
    for (const principal of PRINCIPALS) {
      for (const target of targetsOf(operation)) {
        const expected = expectedOutcome(principal, operation, target);
        const title = `${principal.name} · ${target.name} target → ${describeOutcome(expected)}`;
        if (operation.surface === "mcp" && !principal.role) {
          matrixCase(title, () => unauthenticatedToolCall(principal, operation));
        } else {
          matrixCase(title, () => runCase(principal, operation, target));
        }
      }
    }
  });
}

/** Over MCP a missing or unknown key never reaches a tool: the POST is a 401 with the REST error body. */
async function unauthenticatedToolCall(principal: PrincipalSpec, operation: Operation & { surface: "mcp" }): Promise<void> {
  const { fresh, before } = await targetsForCase();
  const key = keyOf(principal);
  const response = await fetch(`${world.origin}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: operation.tool.name, arguments: toolArguments(operation.tool, idsFor({ name: "own", workspace: "own" }, fresh, ++serial), serial) } }),
  });
  expect(response.status).toBe(401);
  expect(await response.json()).toMatchObject({ error: { code: "unauthorized", message: expect.any(String) } });
  expect(stateDifference(before, (await world.snapshot()))).toEqual([]);
}

describe("MCP connect without a valid key", () => {
  for (const principal of PRINCIPALS.filter((candidate) => !candidate.role)) {
    matrixCase(`${principal.name} → HTTP 401 at connect`, async () => {
      const key = keyOf(principal);
      const client = new Client({ name: "access-matrix", version: "1.0.0" });
      const transport = new StreamableHTTPClientTransport(new URL(`${world.origin}/mcp`), { requestInit: { headers: key ? { authorization: `Bearer ${key}` } : {} } });
      const refusal = await client.connect(transport).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refusal).toBeInstanceOf(StreamableHTTPError);
      expect((refusal as StreamableHTTPError).code).toBe(401);
      await client.close();
    });
  }
});

const CREATE_ACTION = { rest: OPERATIONS.find((operation) => operation.name === "POST /v1/actions")!, mcp: OPERATIONS.find((operation) => operation.name === "run_action")! };
const OWN_TARGET: TargetSpec = { name: "own", workspace: "own" };

describe("an Idempotency-Key replay is checked like any request", () => {
  for (const created of ["rest", "mcp"] as const) {
    for (const replayed of ["rest", "mcp"] as const) {
      // Without a key there is no MCP session to replay in (the 401s above).
      for (const principal of PRINCIPALS.filter((candidate) => replayed === "rest" || candidate.role)) {
        const expected = expectedOutcome(principal, CREATE_ACTION[replayed], OWN_TARGET);
        matrixCase(`admin creates over ${created}; ${principal.name} replays over ${replayed} → ${describeOutcome(expected)}`, () => replayCase(principal, created, replayed));
      }
    }
  }
});

/** The admin's action under `key`, paused at needs_input so it carries a live sign_in_url. */
async function createWithKey(surface: "rest" | "mcp", key: string, body: { account_id: string; type: string; params: object }): Promise<string> {
  let id: string;
  if (surface === "rest") {
    const response = await world.h.request("POST", "/v1/actions", { key: world.keys.admin, body, headers: { "idempotency-key": key } });
    expect(response.status, response.raw).toBe(202);
    id = response.json.id;
  } else {
    const result = (await clients.get("admin")!.callTool({ name: "run_action", arguments: { ...body, idempotency_key: key, wait_seconds: 0 } })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    id = (result.structuredContent as { id: string }).id;
  }
  await pausedAtNeedsInput(world.h, id);
  await world.settle();
  return id;
}

async function replayCase(principal: PrincipalSpec, created: "rest" | "mcp", replayed: "rest" | "mcp"): Promise<void> {
  const accountId = await world.newAccount("own", "challenge");
  const key = `replay-${++serial}`;
  const first = await createWithKey(created, key, { account_id: accountId, type: "connect", params: {} });
  const expected = expectedOutcome(principal, CREATE_ACTION[replayed], OWN_TARGET);
  const before = await world.snapshot();
  let text: string;
  if (replayed === "rest") {
    // The same body with its keys in another order is the same request.
    const response = await world.h.request("POST", "/v1/actions", { key: keyOf(principal) ?? null, body: { params: {}, type: "connect", account_id: accountId }, headers: { "idempotency-key": key } });
    text = response.raw;
    if (expected.ok) {
      expect(response.status, text).toBe(202);
      expect(response.headers.get("idempotency-replayed")).toBe("true");
      expect(response.json.id).toBe(first);
    } else {
      expect(response.status, text).toBe(SEED_REQUEST_ERRORS[expected.code]);
      expect(response.json?.error?.code).toBe(expected.code);
      expect(response.headers.get("idempotency-replayed")).toBeNull();
    }
  } else {
    const result = (await clients.get(principal.name)!.callTool({ name: "run_action", arguments: { account_id: accountId, type: "connect", params: {}, idempotency_key: key, wait_seconds: 0 } })) as CallToolResult;
    text = JSON.stringify(result);
    if (expected.ok) {
      expect(result.isError, text).toBeFalsy();
      expect((result.structuredContent as { id: string }).id).toBe(first);
    } else {
      expect(result.isError, text).toBe(true);
      expect((result.content[0] as { text: string }).text).toMatch(new RegExp(`^${expected.code}: `));
    }
  }
  if (expected.ok) expect(text, "the replay is the action, with its live link").toContain("sign_in_url");
  else {
    // Refused: not the action, not its link.
    expect(text).not.toContain(first);
    expectNothingLeaks(text, [], true);
  }
  // A replay runs nothing again, and a refused one writes nothing.
  expect(stateDifference(before, (await world.snapshot()))).toEqual([]);
}

describe("webhook deliveries, endpoints made by limited keys, and the event stream's backlog", () => {
  /** A retry naming an endpoint and a delivery that is not that endpoint's: 404 whoever owns either, and nothing written. */
  async function refusedRetry(key: string, endpointId: string, deliveryId: string, hidden: readonly string[]): Promise<void> {
    await world.settle();
    const before = await world.snapshot();
    const response = await restRequest({ method: "POST", path: `/v1/webhooks/${encodeURIComponent(endpointId)}/deliveries/${encodeURIComponent(deliveryId)}/retry` }, key);
    expect(response.status, response.raw).toBe(404);
    expect(response.json?.error?.code).toBe("not_found");
    expectNothingLeaks(response.raw, hidden, true);
    expect(stateDifference(before, (await world.snapshot())), "a refused request changed state").toEqual([]);
  }

  matrixCase("admin · own endpoint, another workspace's delivery → 404 not_found", async () => {
    const fresh = await world.freshTargets();
    await refusedRetry(world.keys.admin, fresh.own.webhookId, fresh.other.deliveryId, [fresh.other.webhookId, fresh.other.actionId, fresh.other.accountId]);
  });

  matrixCase("other workspace's admin · its endpoint, our delivery → 404 not_found", async () => {
    const fresh = await world.freshTargets();
    await refusedRetry(world.keys.otherAdmin, fresh.other.webhookId, fresh.own.deliveryId, [fresh.own.webhookId, fresh.own.actionId, fresh.own.accountId]);
  });

  matrixCase("admin · own endpoint, a delivery of another own endpoint → 404 not_found", async () => {
    const fresh = await world.freshTargets();
    const admin = (await world.h.engine.keys.authenticate(world.keys.admin))!;
    const second = (await world.h.engine.webhooks.create(admin, { url: UNREACHABLE_HOOK })).id;
    await world.newAccount("own", "plain"); // an event, so the second endpoint has a delivery
    await world.settle();
    const delivery = (await world.h.store.webhooks.deliveries(second, 1))[0]!.id;
    await refusedRetry(world.keys.admin, fresh.own.webhookId, delivery, []);
  });

  matrixCase("admin limited to other accounts · an endpoint it made → gets only its accounts' events, and it may manage it", async () => {
    await world.freshTargets();
    const key = world.keys.limitedAdmin;
    const created = await restRequest({ method: "POST", path: "/v1/webhooks", body: { url: UNREACHABLE_HOOK } }, key);
    expect(created.status, created.raw).toBe(201);
    const id: string = created.json.id;
    // An event of an account outside its list, then the events of an action on its one account.
    const outside = await world.newAccount("own", "plain");
    const admin = (await world.h.engine.keys.authenticate(world.keys.admin))!;
    const inside = (await world.h.engine.createAction(admin, { account_id: world.allowedAccountId, type: "connect", params: {} })).id;
    await world.settle();
    const deliveries = await restRequest({ method: "GET", path: `/v1/webhooks/${id}/deliveries?limit=100` }, key);
    expect(deliveries.status, deliveries.raw).toBe(200);
    expect(deliveries.json.data.map((delivery: { subject_id: string }) => delivery.subject_id)).toContain(inside);
    expect(deliveries.raw, "an account outside the list reached its endpoint").not.toContain(outside);
    const listed = await restRequest({ method: "GET", path: "/v1/webhooks" }, key);
    expect(listed.json.data.map((endpoint: { id: string }) => endpoint.id)).toContain(id);
    const deleted = await restRequest({ method: "DELETE", path: `/v1/webhooks/${id}` }, key);
    expect(deleted.status, deleted.raw).toBe(204);
  });

  // Resuming after an event id (Last-Event-ID) sends what came since at once: only the key's workspace, only the accounts it may see.
  for (const principal of PRINCIPALS.filter((candidate) => candidate.role)) {
    const sees = principal.limited ? "none of the targets' events" : "its workspace's targets' events only";
    matrixCase(`${principal.name} · GET /v1/events resumed from before the targets → ${sees}`, async () => {
      // A mark in the key's own workspace: this is about what the backlog carries, not about whose ids are taken as marks.
      const { store } = world.h;
      const workspaceId = (await world.h.engine.keys.authenticate(keyOf(principal)!))!.workspaceId;
      const mark = (await store.events.newest(workspaceId))!.id;
      const fresh = await world.freshTargets();
      // Then an action the key may see, made by its workspace's admin: the backlog is all sent once its events are.
      const admin = (await world.h.engine.keys.authenticate(principal.workspace === "own" ? world.keys.admin : world.keys.otherAdmin))!;
      const last = (await world.h.engine.createAction(admin, { account_id: principal.limited ? world.allowedAccountId : (principal.workspace === "own" ? fresh.own : fresh.other).accountId, type: "connect", params: {} })).id;
      const response = await restRequest({ method: "GET", path: "/v1/events" }, keyOf(principal), { headers: { "last-event-id": mark }, until: (raw) => raw.includes(last) });
      expect(response.raw, "the backlog reached the action made after the targets").toContain(last);
      expect(response.status, response.raw).toBe(200);
      expectNothingLeaks(response.raw, hiddenIds(principal, fresh, {}), false);
      if (!principal.limited) expect(response.raw, "the backlog was sent").toContain((principal.workspace === "own" ? fresh.own : fresh.other).actionId);
    });
  }
});
