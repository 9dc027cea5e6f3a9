import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTES } from "../../src/api/routes/index.js";
import { TOOLS } from "../../src/mcp/tools/index.js";
import { eventually } from "../helpers/scripted-executor.js";
import { PERMISSION_OF, PRINCIPALS, expectedOutcome, type Outcome, type PrincipalSpec, type TargetSpec } from "./access-rule.js";
import { OPERATIONS, hiddenIds, idsFor, restCall, restName, targetsOf, toolArguments, type Operation } from "./matrix-operations.js";
import { SEED_REQUEST_ERRORS } from "./seed-errors.js";
import { stateDifference } from "./state.js";
import { createWorld, type World } from "./world.js";

let world: World;
const clients = new Map<string, Client>();
const tally = { planned: 0, run: 0, passed: 0 };
let serial = 0;

beforeAll(async () => {
  world = await createWorld();
  for (const principal of PRINCIPALS.filter((candidate) => candidate.role)) clients.set(principal.name, await mcpClient(keyOf(principal)!));
});

afterAll(async () => {
  console.log(`access matrix: ${tally.run} of ${tally.planned} cases run, ${tally.passed} passed (${((100 * tally.passed) / Math.max(1, tally.run)).toFixed(1)} %)`);
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

/** Runs one operation for one principal on one target, then holds it to the rule. */
async function runCase(principal: PrincipalSpec, operation: Operation, target: TargetSpec): Promise<void> {
  const fresh = await world.freshTargets();
  const ids = idsFor(target, fresh, ++serial);
  const expected = expectedOutcome(principal, operation, target);
  const hidden = hiddenIds(principal, fresh, ids);
  const before = world.snapshot();
  if (operation.surface === "rest") {
    const call = restCall(operation.route, ids, serial);
    const response = await world.h.request(call.method, call.path, { key: keyOf(principal) ?? null, ...(call.body === undefined ? {} : { body: call.body }) });
    if (expected.ok) {
      // Allowed: one of the route's documented outcomes other than a refusal of the caller (402 is x402's "pay first").
      const documented = Object.keys(operation.route.responses).map(Number).filter((status) => status < 400 || status === 402 || status >= 500);
      expect(documented, response.raw).toContain(response.status);
    } else {
      expect(response.status, response.raw).toBe(SEED_REQUEST_ERRORS[expected.code]);
      expect(response.json?.error?.code).toBe(expected.code);
    }
    expectNothingLeaks(response.raw, hidden, !expected.ok);
  } else {
    const result = (await clients.get(principal.name)!.callTool({ name: operation.tool.name, arguments: toolArguments(operation.tool, ids, serial) })) as CallToolResult;
    const text = result.content.map((block) => (block.type === "text" ? block.text : "")).join("\n");
    if (expected.ok) expect(result.isError, text).toBeFalsy();
    else {
      expect(result.isError, text).toBe(true);
      expect(text).toMatch(new RegExp(`^${expected.code}: `));
    }
    expectNothingLeaks(JSON.stringify(result), hidden, !expected.ok);
  }
  if (!expected.ok) expect(stateDifference(before, world.snapshot()), "a refused request changed state").toEqual([]);
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
  const fresh = await world.freshTargets();
  const before = world.snapshot();
  const key = keyOf(principal);
  const response = await fetch(`${world.origin}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: operation.tool.name, arguments: toolArguments(operation.tool, idsFor({ name: "own", workspace: "own" }, fresh, ++serial), serial) } }),
  });
  expect(response.status).toBe(401);
  expect(await response.json()).toMatchObject({ error: { code: "unauthorized", message: expect.any(String) } });
  expect(stateDifference(before, world.snapshot())).toEqual([]);
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
  await eventually(() => world.h.store.actions.get(id)?.status === "needs_input");
  await world.settle();
  return id;
}

async function replayCase(principal: PrincipalSpec, created: "rest" | "mcp", replayed: "rest" | "mcp"): Promise<void> {
  const accountId = world.newAccount("own", "challenge");
  const key = `replay-${++serial}`;
  const first = await createWithKey(created, key, { account_id: accountId, type: "connect", params: {} });
  const expected = expectedOutcome(principal, CREATE_ACTION[replayed], OWN_TARGET);
  const before = world.snapshot();
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
  expect(stateDifference(before, world.snapshot())).toEqual([]);
}
