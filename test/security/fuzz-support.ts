import fc from "fast-check";
import { mcpRawCases, mcpSdkCases, restCases, type FuzzCase } from "./fuzz-cases.js";
import { McpClients } from "./fuzz-sdk-client.js";
import { McpSessions, sendMcpRaw, sendRest, type Resolve } from "./fuzz-send.js";
import type { Verdict } from "./fuzz-verdict.js";
import { closeConnections } from "./http-client.js";
import { stateDifference } from "./state.js";
import { createWorld, type World } from "./world.js";

/**
 * The fuzz runner shared by the suite (test/security/fuzz.test.ts) and the chaos bench
 * (bench/chaos/fuzz.ts): the same generators, only the number of requests differs.
 * Requests go one at a time over real HTTP, so each state change has exactly one cause.
 */

export interface FuzzPlan {
  seed: number;
  rest: number;
  mcpRaw: number;
  mcpSdk: number;
}

export interface Violation {
  request: string;
  /** The case sent just before (a dropped connection or a late write may be its doing). */
  previous: string;
  status: string;
  problem: string;
}

export interface FuzzFigures {
  seed: number;
  requests: number;
  durationMs: number;
  /** Count of each status, per surface (`rest 422`, `mcp-raw 200`, `mcp-sdk isError`). */
  statuses: Record<string, number>;
  /** Count of each request-error code met. */
  codes: Record<string, number>;
  serverErrors: number;
  rejected: number;
  rejectedChangedState: number;
  accepted: number;
  acceptedChangedState: number;
  violations: Violation[];
  /** Time spent between requests waiting for the work accepted ones started to end. */
  settleMs: number;
  /** The slowest cases (time from sending to the verdict), slowest first. */
  slowest: { ms: number; request: string }[];
  /** What the served app logged as unexpected (the cause of a 500). */
  serverLog: string[];
}

/** How often the targets are replaced, as earlier cases delete accounts and cancel or answer actions. */
const REFRESH_EVERY = 50;
const PROGRESS_EVERY = 1_000;
const MAX_KINDS_SHOWN = 20;

/** All cases, interleaved so that REST and MCP requests meet the same state (and the same Idempotency-Keys). */
export function planCases(plan: FuzzPlan): FuzzCase[] {
  const lists: FuzzCase[][] = [
    fc.sample(restCases, { numRuns: plan.rest, seed: plan.seed }),
    fc.sample(mcpRawCases, { numRuns: plan.mcpRaw, seed: plan.seed + 1 }),
    fc.sample(mcpSdkCases, { numRuns: plan.mcpSdk, seed: plan.seed + 2 }),
  ];
  return lists
    .flatMap((list) => list.map((spec, index) => ({ spec, at: (index + 0.5) / list.length })))
    .sort((a, b) => a.at - b.at)
    .map(({ spec }) => spec);
}

export function describeCase(spec: FuzzCase): string {
  const text = JSON.stringify(spec, (_key, value: unknown) => (typeof value === "string" && value.length > 120 ? `${value.slice(0, 120)}…(${value.length} chars)` : value));
  return text.length > 600 ? `${text.slice(0, 600)}…` : text;
}

async function tokensOf(world: World): Promise<Record<string, string>> {
  const fresh = await world.freshTargets();
  return {
    own_account: fresh.own.accountId,
    own_action: fresh.own.actionId,
    other_account: fresh.other.accountId,
    other_action: fresh.other.actionId,
    own_webhook: fresh.own.webhookId,
    other_webhook: fresh.other.webhookId,
    own_delivery: fresh.own.deliveryId,
    other_delivery: fresh.other.deliveryId,
    own_feedback: fresh.own.feedbackId,
    other_feedback: fresh.other.feedbackId,
    own_event: fresh.own.eventId,
    other_event: fresh.other.eventId,
    own_steps_action: fresh.own.stepsActionId,
    other_steps_action: fresh.other.stepsActionId,
    own_routine: fresh.own.routineName,
    other_routine: fresh.other.routineName,
    allowed_account: world.allowedAccountId,
    ...Object.fromEntries(Object.entries(world.keys).map(([name, key]) => [`key:${name}`, key])),
  };
}

/** Sends every planned case and checks the promises; `progress` hears a line every so often. */
export async function runFuzz(plan: FuzzPlan, progress: (line: string) => void = () => undefined): Promise<FuzzFigures> {
  const world = await createWorld();
  const sessions = new McpSessions(world);
  const clients = new McpClients(world);
  const cases = planCases(plan);
  const figures: FuzzFigures = { seed: plan.seed, requests: 0, durationMs: 0, statuses: {}, codes: {}, serverErrors: 0, rejected: 0, rejectedChangedState: 0, accepted: 0, acceptedChangedState: 0, violations: [], settleMs: 0, slowest: [], serverLog: [] };
  const started = Date.now();
  let tokens: Record<string, string> = {};
  const resolve: Resolve = (text) => text.replace(/\{\{([\w:]+)\}\}/g, (whole, name: string) => tokens[name] ?? whole);
  try {
    for (const [index, spec] of cases.entries()) {
      if (index % REFRESH_EVERY === 0) {
        await world.settle();
        tokens = await tokensOf(world);
        if (index > 0 && index % PROGRESS_EVERY === 0) progress(`${index} of ${cases.length} sent, ${figures.violations.length} violations`);
      }
      const settling = Date.now();
      await world.settle();
      figures.settleMs += Date.now() - settling;
      const before = await world.snapshot();
      const sentAt = Date.now();
      const verdict = await send(world, spec, resolve, sessions, clients).catch((error: unknown): Verdict => ({ status: "no-response", rejected: false, problems: [`no response: ${String(error)}`] }));
      noteDuration(figures, spec, Date.now() - sentAt);
      const changes = stateDifference(before, (await world.snapshot()));
      record(figures, spec, verdict, changes, cases[index - 1]);
    }
  } finally {
    figures.durationMs = Date.now() - started;
    figures.serverLog = world.serverErrors.slice(0, 5);
    figures.violations.push(...prototypeProblems());
    await clients.close();
    await world.close();
    closeConnections();
  }
  return figures;
}

function send(world: World, spec: FuzzCase, resolve: Resolve, sessions: McpSessions, clients: McpClients): Promise<Verdict> {
  switch (spec.surface) {
    case "rest":
      return sendRest(world, spec, resolve);
    case "mcp-raw":
      return sendMcpRaw(world, spec, resolve, sessions);
    case "mcp-sdk":
      return clients.call(spec, resolve);
  }
}

const SLOWEST_KEPT = 3;

function noteDuration(figures: FuzzFigures, spec: FuzzCase, ms: number): void {
  if (figures.slowest.length === SLOWEST_KEPT && ms <= figures.slowest[SLOWEST_KEPT - 1]!.ms) return;
  figures.slowest = [...figures.slowest, { ms, request: describeCase(spec) }].sort((a, b) => b.ms - a.ms).slice(0, SLOWEST_KEPT);
}

function record(figures: FuzzFigures, spec: FuzzCase, verdict: Verdict, changes: string[], previous: FuzzCase | undefined): void {
  figures.requests += 1;
  const statusKey = `${spec.surface} ${verdict.status}`;
  figures.statuses[statusKey] = (figures.statuses[statusKey] ?? 0) + 1;
  if (verdict.code) figures.codes[verdict.code] = (figures.codes[verdict.code] ?? 0) + 1;
  if (verdict.serverError) figures.serverErrors += 1;
  const violation = (problem: string): void => void figures.violations.push({ request: describeCase(spec), previous: previous ? describeCase(previous) : "-", status: verdict.status, problem });
  verdict.problems.forEach(violation);
  if (verdict.rejected) {
    figures.rejected += 1;
    if (changes.length > 0) {
      figures.rejectedChangedState += 1;
      violation(`a rejected request changed state: ${changes.join("; ")}`);
    }
  } else {
    figures.accepted += 1;
    if (changes.length > 0) figures.acceptedChangedState += 1;
  }
}

/** A `__proto__` key that reached an object merge would show here, in the server's own process. */
function prototypeProblems(): Violation[] {
  const added = Object.keys(Object.prototype);
  const polluted = ({} as Record<string, unknown>).polluted !== undefined;
  return added.length > 0 || polluted ? [{ request: "(all)", previous: "-", status: "-", problem: `Object.prototype was polluted: ${added.join(", ") || "polluted"}` }] : [];
}

/** Violations grouped by what went wrong (numbers blurred), each kind with its count and first example. */
function violationKinds(violations: readonly Violation[]): { kind: string; count: number; example: Violation }[] {
  const kinds = new Map<string, { kind: string; count: number; example: Violation }>();
  for (const violation of violations) {
    // The kind is the problem's first clause (what follows the colon quotes bodies, which differ every time).
    const kind = `[${violation.status}] ${violation.problem.split(":")[0]!.replace(/\d+/g, "#")}`;
    const known = kinds.get(kind);
    if (known) known.count += 1;
    else kinds.set(kind, { kind, count: 1, example: violation });
  }
  return [...kinds.values()].sort((a, b) => b.count - a.count);
}

/** The figures as a short report. */
export function formatFigures(figures: FuzzFigures): string {
  const sorted = (record: Record<string, number>): string =>
    Object.entries(record)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, count]) => `${name}: ${count}`)
      .join(", ");
  const lines = [
    `fuzz (seed ${figures.seed}): ${figures.requests} requests in ${(figures.durationMs / 1000).toFixed(1)} s (${(figures.settleMs / 1000).toFixed(1)} s of it waiting for accepted work to end)`,
    `  statuses: ${sorted(figures.statuses)}`,
    `  request-error codes: ${sorted(figures.codes)}`,
    `  5xx: ${figures.serverErrors}`,
    `  rejected: ${figures.rejected} (changed state: ${figures.rejectedChangedState})`,
    `  accepted: ${figures.accepted} (changed state: ${figures.acceptedChangedState})`,
    `  slowest: ${figures.slowest.map((slow) => `${slow.ms} ms ${slow.request.slice(0, 160)}`).join("\n           ")}`,
    `  violations: ${figures.violations.length}`,
    ...violationKinds(figures.violations)
      .slice(0, MAX_KINDS_SHOWN)
      .flatMap(({ count, example }) => [
        `    - ${count} × [${example.status}] ${example.problem.slice(0, 400)}`,
        `      e.g. request: ${example.request}`,
        `      sent after: ${example.previous}`,
      ]),
    ...(figures.serverLog.length > 0 ? ["  server log (first errors):", ...figures.serverLog.map((line) => `    ${line.slice(0, 1_500)}`)] : []),
  ];
  return lines.join("\n");
}
