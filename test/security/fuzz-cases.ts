import fc from "fast-check";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import type { Route } from "../../src/api/route.js";
import { ROUTES } from "../../src/api/routes/index.js";
import { ACTION_PARAMS, ACTION_TYPES } from "../../src/domain/actions.js";
import { TOOLS } from "../../src/mcp/tools/index.js";
import { BAD_IDEMPOTENCY_KEYS, HOSTILE_PATH_IDS, HOSTILE_QUERY_VALUES, ODD_PATHS, hostileValue } from "./hostile.js";
import { arbitraryOf, jsonSchemaOf, type ArbitraryOptions, type JsonSchema } from "./schema-values.js";
import type { WorldKeys } from "./world.js";

/**
 * The fuzz cases: REST requests and /mcp messages generated from the routes' and tools'
 * own zod schemas, with hostile values mixed in at every level. Ids and keys are tokens
 * (`{{own_action}}`, `{{key:admin}}`) resolved when the case is sent, so a case still
 * aims at something live after earlier cases deleted or canceled things.
 */

/** Who sends it: a key of the world, none, or a raw Authorization header (tokens allowed). */
export type Auth = keyof WorldKeys | "none" | { header: string };

/** A body as generated; huge and deep ones are built only when sent. */
export type BodySpec =
  | { kind: "none" }
  | { kind: "json"; value: unknown }
  | { kind: "text"; text: string }
  | { kind: "bytes"; bytes: readonly number[] }
  | { kind: "deep"; depth: number; nest: "array" | "object"; where: "whole" | "params" }
  | { kind: "huge"; bytes: number; shape: "string" | "whitespace" | "array"; chunked: boolean };

export interface RestCase {
  surface: "rest";
  method: string;
  path: string;
  auth: Auth;
  contentType: string | undefined;
  idempotencyKey: string | undefined;
  /** `Last-Event-ID` (the event stream's resume point). */
  lastEventId: string | undefined;
  body: BodySpec;
}

export interface McpRawCase {
  surface: "mcp-raw";
  auth: Auth;
  /** The sender's own initialized session, none, a made-up id, or the admin's session (with another key). */
  session: "own" | "none" | "made-up" | "admin's";
  accept: string | undefined;
  contentType: string | undefined;
  body: BodySpec;
}

export interface McpSdkCase {
  surface: "mcp-sdk";
  auth: Exclude<keyof WorldKeys, "bad">;
  tool: string;
  args: unknown;
}

export type FuzzCase = RestCase | McpRawCase | McpSdkCase;

const VALID_KEYS = ["admin", "operator", "readOnly", "otherAdmin", "limitedOperator", "limitedAdmin"] as const;

/** Mostly the admin (so requests get past the role checks), every other principal now and then. */
const auth: fc.Arbitrary<Auth> = fc.oneof(
  { weight: 8, arbitrary: fc.constant("admin" as const) },
  { weight: 4, arbitrary: fc.constantFrom(...VALID_KEYS) },
  { weight: 1, arbitrary: fc.constantFrom("none" as const, "bad" as const) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      ...["Bearer", "Bearer ", "Basic YWRtaW46YWRtaW4=", "Bearer as_", "bearer {{key:admin}}", "Bearer {{key:admin}} {{key:admin}}", "Bearer {{key:admin}}x", `Bearer ${"a".repeat(300)}`, "Bearer\t{{key:admin}}", "Token {{key:admin}}"].map((header) => ({ header })),
    ),
  },
);

// Accounts nothing waits on: an action created on them ends at once, so `?wait` never holds a request for long.
const accountIds = fc.constantFrom("{{own_account}}", "{{own_account}}", "{{allowed_account}}", "{{other_account}}", "acc_missing000000000000");
const actionIds = fc.constantFrom("{{own_action}}", "{{own_action}}", "{{other_action}}", "act_missing000000000000");
const webhookIds = fc.constantFrom("{{own_webhook}}", "{{own_webhook}}", "{{other_webhook}}", "whe_missing000000000000");
const deliveryIds = fc.constantFrom("{{own_delivery}}", "{{own_delivery}}", "{{other_delivery}}", "dlv_missing000000000000");
const feedbackIds = fc.constantFrom("{{own_feedback}}", "{{own_feedback}}", "{{other_feedback}}", "fbk_missing000000000000");
/** Actions a routine is saved from (`save_routine`): a succeeded browser_steps action, or not one. */
const stepsActionIds = fc.constantFrom("{{own_steps_action}}", "{{own_steps_action}}", "{{own_action}}", "{{other_steps_action}}", "act_missing000000000000");
const routineNames = fc.constantFrom("{{own_routine}}", "{{own_routine}}", "{{other_routine}}", "missing_routine");
/** What a path's `{id}` (a routine's `{name}`) names, by its collection. */
const PATH_IDS: readonly [prefix: string, param: "id" | "name", ids: fc.Arbitrary<string>][] = [
  ["/v1/accounts/", "id", accountIds],
  ["/v1/actions/", "id", actionIds],
  ["/v1/webhooks/", "id", webhookIds],
  ["/v1/feedback/", "id", feedbackIds],
  ["/v1/routines/", "name", routineNames],
];
/**
 * Webhook URLs: mostly ones the SSRF check and the URL parser must refuse, and loopback's discard
 * port (the world allows private targets, so that one is created; nothing listens there, so a
 * delivery fails at once and nothing leaves the machine).
 */
const webhookUrls = fc.oneof(
  { weight: 3, arbitrary: fc.constant("http://127.0.0.1:9/fuzz") },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "file:///etc/passwd",
      "ftp://127.0.0.1/",
      "javascript:alert(1)",
      "http://",
      "http://user:pw@127.0.0.1:9/",
      "http://[::1]:9/",
      "http://0x7f.1:9/",
      "https://[fe80::1%25lo]:9/",
      "http://no-such-host.invalid/",
      "gopher://127.0.0.1:9/_",
      "http://127.0.0.1:9/" + "x".repeat(1_990),
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
);
/** Last-Event-ID values: an event of either workspace, made-up ones, and what a header parser trips on. */
const lastEventIds = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom("{{own_event}}", "{{other_event}}", "evt_missing000000000000") },
  { weight: 1, arbitrary: fc.constantFrom("", " ", "0", "-1", "99999999999999999999", "NaN", "__proto__", "' OR 1=1 --", "e".repeat(4_000)) },
);
/** As an HTTP header: only what a client can put on the wire (node:http refuses NUL and line breaks). */
const idempotencyHeaders = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom("fuzz-key-1", "fuzz-key-2", "fuzz-key-3") },
  { weight: 2, arbitrary: fc.string({ minLength: 1, maxLength: 40, unit: "grapheme-ascii" }) },
  { weight: 2, arbitrary: fc.constantFrom(...BAD_IDEMPOTENCY_KEYS) },
);
/** As the MCP `idempotency_key` argument, where any character can be sent. */
const idempotencyArguments = fc.oneof({ weight: 6, arbitrary: idempotencyHeaders }, { weight: 1, arbitrary: fc.constantFrom("nul\u0000", "line\nbreak", "\ud800") });

const fieldOptions: ArbitraryOptions = {
  overrides: { account_id: accountIds, action_id: actionIds, from_action_id: stepsActionIds, idempotency_key: idempotencyArguments, url: webhookUrls },
  hostile: hostileValue,
  hostileOneIn: 12,
};

/** Values for a request schema; an action's params are drawn from the schema of the chosen type, so many creates are valid. */
function valuesOf(schema: JsonSchema): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {};
  if (!properties.type || !properties.params) return arbitraryOf(schema, fieldOptions);
  return fc.constantFrom(...ACTION_TYPES).chain((type) =>
    arbitraryOf({ ...schema, properties: { ...properties, type: { const: type }, params: jsonSchemaOf(ACTION_PARAMS[type]) } }, fieldOptions),
  );
}

/** Bodies no JSON parser should take, or that parse to something odd. */
const MALFORMED_BODIES: readonly BodySpec[] = [
  { kind: "none" },
  { kind: "text", text: "" },
  { kind: "text", text: "{" },
  { kind: "text", text: "{not json" },
  { kind: "text", text: '{"a":}' },
  { kind: "text", text: "null" },
  { kind: "text", text: "[]" },
  { kind: "text", text: '"string"' },
  { kind: "text", text: "1e999" },
  { kind: "text", text: '{"answer":NaN}' },
  { kind: "text", text: '{"answer":"x","answer":"y"}' },
  { kind: "text", text: '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}' },
  { kind: "text", text: '\ufeff{"answer":"bom"}' },
  { kind: "text", text: '{"answer":"\\ud800"}' },
  { kind: "bytes", bytes: [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc0, 0x80, 0x22, 0x7d] },
  { kind: "bytes", bytes: [0xef, 0xbb, 0xbf, 0x00, 0x00, 0x7b, 0x7d] },
];

const hostileBody: fc.Arbitrary<BodySpec> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...MALFORMED_BODIES) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("deep" as const), depth: fc.constantFrom(17, 33, 100, 5_000, 100_000), nest: fc.constantFrom("array" as const, "object" as const), where: fc.constantFrom("whole" as const, "params" as const) }),
  },
  // Over the 1 MiB limit: rarer, as each is megabytes on the wire.
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("huge" as const), bytes: fc.constantFrom(1024 * 1024 + 1, 1_200_000, 2 * 1024 * 1024), shape: fc.constantFrom("string" as const, "whitespace" as const, "array" as const), chunked: fc.boolean() }),
  },
);

function bodyOf(schema: Route["body"]): fc.Arbitrary<BodySpec> {
  if (!schema) return fc.oneof({ weight: 6, arbitrary: fc.constant<BodySpec>({ kind: "none" }) }, { weight: 1, arbitrary: hostileBody });
  const json = valuesOf(jsonSchemaOf(schema)).map((value): BodySpec => ({ kind: "json", value }));
  return fc.oneof({ weight: 10, arbitrary: json }, { weight: 2, arbitrary: hostileBody });
}

/** Query pairs (a name may repeat): from the route's query schema, plus odd values and names it does not know. */
function queryOf(schema: Route["query"]): fc.Arbitrary<[string, string][]> {
  const known = schema ? Object.keys(jsonSchemaOf(schema).properties ?? {}) : [];
  const fitting = schema
    ? arbitraryOf(jsonSchemaOf(schema), fieldOptions).map((value) =>
        typeof value === "object" && value !== null ? Object.entries(value).flatMap(([name, inner]) => pairs(name, inner)) : [["q", String(value)] as [string, string]],
      )
    : fc.constant([] as [string, string][]);
  const odd = fc.array(fc.tuple(fc.constantFrom(...known, "wait", "limit", "unknown", "__proto__"), fc.constantFrom(...HOSTILE_QUERY_VALUES)), { minLength: 1, maxLength: 3 });
  return fc.oneof({ weight: 5, arbitrary: fitting }, { weight: 2, arbitrary: odd });
}

function pairs(name: string, value: unknown): [string, string][] {
  if (Array.isArray(value)) return value.map((inner) => [name, String(inner)]);
  return [[name, typeof value === "object" && value !== null ? JSON.stringify(value) : String(value)]];
}

const contentType = fc.oneof(
  { weight: 10, arbitrary: fc.constant<string | undefined>("application/json") },
  { weight: 1, arbitrary: fc.constantFrom<string | undefined>(undefined, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=utf-16", "application/xml", "*/*") },
);

/** The route's path with each `{name}` filled: mostly live or missing ids of the right kind, now and then a hostile one. */
function pathOf(route: Route): fc.Arbitrary<string> {
  const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!);
  if (names.length === 0) return fc.constant(route.path);
  const idsFor = (name: string): fc.Arbitrary<string> => {
    if (name === "delivery_id") return deliveryIds;
    const found = PATH_IDS.find(([prefix, param]) => route.path.startsWith(prefix) && param === name);
    if (!found) throw new Error(`${route.path}: what does {${name}} name? Add it to PATH_IDS`);
    return found[2];
  };
  const segment = (name: string): fc.Arbitrary<string> => fc.oneof({ weight: 5, arbitrary: idsFor(name) }, { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_PATH_IDS) });
  return fc.tuple(...names.map(segment)).map((ids) => names.reduce((path, name, index) => path.replace(`{${name}}`, ids[index]!), route.path));
}

const routeCase: fc.Arbitrary<RestCase> = fc.constantFrom(...ROUTES).chain((route) =>
  fc.record({
    surface: fc.constant("rest" as const),
    method: fc.constant(route.method.toUpperCase()),
    path: fc.tuple(pathOf(route), queryOf(route.query)).map(([path, query]) => (query.length ? `${path}?${new URLSearchParams(query).toString()}` : path)),
    auth,
    contentType,
    idempotencyKey: route.path === "/v1/actions" && route.method === "post" ? fc.option(idempotencyHeaders, { freq: 2, nil: undefined }) : fc.constant(undefined),
    lastEventId: (route.headers ?? []).some((header) => header.name === "Last-Event-ID") ? fc.option(lastEventIds, { freq: 2, nil: undefined }) : fc.constant(undefined),
    body: bodyOf(route.body),
  }),
);

const oddPathCase: fc.Arbitrary<RestCase> = fc.record({
  surface: fc.constant("rest" as const),
  method: fc.constantFrom("GET", "POST", "PATCH", "DELETE", "PUT", "OPTIONS"),
  path: fc.constantFrom(...ODD_PATHS),
  auth,
  contentType,
  idempotencyKey: fc.constant(undefined),
  lastEventId: fc.constant(undefined),
  body: fc.oneof(fc.constant<BodySpec>({ kind: "none" }), hostileBody),
});

/** The pair that once overflowed the request hash (a 500): a create whose params nest deep, under an Idempotency-Key. */
const deepCreateCase: fc.Arbitrary<RestCase> = fc.record({
  surface: fc.constant("rest" as const),
  method: fc.constant("POST"),
  path: fc.constant("/v1/actions"),
  auth: fc.constant<Auth>("admin"),
  contentType: fc.constant<string | undefined>("application/json"),
  idempotencyKey: fc.string({ minLength: 1, maxLength: 40, unit: "grapheme-ascii" }).map((key): string | undefined => `deep-${key}`),
  lastEventId: fc.constant(undefined),
  body: fc.record({ kind: fc.constant("deep" as const), depth: fc.constantFrom(17, 33, 1_000, 5_000, 100_000), nest: fc.constantFrom("array" as const, "object" as const), where: fc.constant("params" as const) }),
});

export const restCases: fc.Arbitrary<RestCase> = fc.oneof({ weight: 20, arbitrary: routeCase }, { weight: 2, arbitrary: oddPathCase }, { weight: 1, arbitrary: deepCreateCase });

/** Arguments of a tool from its input schema. */
function toolArguments(tool: (typeof TOOLS)[number]): fc.Arbitrary<unknown> {
  return valuesOf(jsonSchemaOf(tool.input));
}

const toolCall = fc
  .oneof({ weight: 12, arbitrary: fc.constantFrom(...TOOLS) }, { weight: 1, arbitrary: fc.constant(undefined) })
  .chain((tool) => fc.record({ name: tool ? fc.constant(tool.name) : fc.constantFrom("no_such_tool", "", "__proto__", "run_action\u0000"), arguments: tool ? toolArguments(tool) : hostileValue }));

const jsonRpcId = fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 1, max: 1_000_000 }) }, { weight: 1, arbitrary: fc.constantFrom<unknown>("id", null, 0, -1, 1e308, { a: 1 }, [1], "\u0000") });

const mcpMessage: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 10, arbitrary: fc.record({ jsonrpc: fc.constant("2.0"), id: jsonRpcId, method: fc.constant("tools/call"), params: toolCall }) },
  {
    weight: 3,
    arbitrary: fc.record({
      jsonrpc: fc.constantFrom("2.0", "2.0", "1.0", 2),
      id: jsonRpcId,
      method: fc.constantFrom("tools/list", "ping", "resources/read", "resources/subscribe", "resources/templates/list", "initialize", "logging/setLevel", "no/such/method", "__proto__"),
      params: fc.oneof(
        fc.record({ uri: fc.constantFrom("action://{{own_action}}", "action://{{other_action}}", "action://act_missing", "action://", "file:///etc/passwd", "action://%2e%2e") }),
        fc.constant({ protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "fuzz", version: "1" } }),
        fc.record({ level: fc.constantFrom("debug", "emergency", "bogus") }),
        hostileValue,
      ),
    }),
  },
  { weight: 1, arbitrary: fc.array(fc.record({ jsonrpc: fc.constant("2.0"), id: jsonRpcId, method: fc.constant("tools/call"), params: toolCall }), { minLength: 0, maxLength: 3 }) },
  { weight: 1, arbitrary: fc.record({ jsonrpc: fc.constant("2.0"), method: fc.constantFrom("notifications/initialized", "notifications/cancelled", "notifications/roots/list_changed"), params: fc.option(hostileValue, { nil: undefined }) }) },
);

export const mcpRawCases: fc.Arbitrary<McpRawCase> = fc.record({
  surface: fc.constant("mcp-raw" as const),
  auth: fc.oneof({ weight: 12, arbitrary: fc.constantFrom<Auth>("admin", "admin", ...VALID_KEYS) }, { weight: 1, arbitrary: auth }),
  session: fc.oneof({ weight: 12, arbitrary: fc.constant("own" as const) }, { weight: 1, arbitrary: fc.constantFrom("none" as const, "made-up" as const, "admin's" as const) }),
  accept: fc.oneof({ weight: 12, arbitrary: fc.constant<string | undefined>("application/json, text/event-stream") }, { weight: 1, arbitrary: fc.constantFrom<string | undefined>(undefined, "application/json", "text/html", "*/*") }),
  contentType: fc.oneof({ weight: 12, arbitrary: fc.constant<string | undefined>("application/json") }, { weight: 1, arbitrary: fc.constantFrom<string | undefined>(undefined, "text/plain", "application/json; charset=latin1") }),
  body: fc.oneof({ weight: 10, arbitrary: mcpMessage.map((value): BodySpec => ({ kind: "json", value })) }, { weight: 2, arbitrary: hostileBody }),
});

export const mcpSdkCases: fc.Arbitrary<McpSdkCase> = fc
  .constantFrom(...TOOLS)
  .chain((tool) => fc.record({ surface: fc.constant("mcp-sdk" as const), auth: fc.constantFrom<McpSdkCase["auth"]>("admin", "admin", "admin", ...VALID_KEYS), tool: fc.constant(tool.name), args: toolArguments(tool) }));
