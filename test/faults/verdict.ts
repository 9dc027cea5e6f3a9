import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { INTERRUPTED_AFTER_COMMIT } from "../../src/engine/execution/index.js";
import { TERMINAL, type Clients } from "./clients.js";
import type { Fleet } from "./fleet.js";

/** What one fault did to the fleet, checked against the sandbox's own record of posts and the store. */
export interface Verdict {
  fault: string;
  /** Actions the clients were given an id for. */
  actions: number;
  /** Posts made more than once: a text on the sandbox twice, or a second submission it refused as a duplicate. */
  doubles: number;
  /** Acknowledged actions missing from the store or not ended after the fault. */
  lost: number;
  /** Actions of a healthy member failed as interrupted. */
  interrupted: number;
  /** Actions taken from a live holder: recovered (requeued or failed) while their runner's member was healthy. */
  takenFromLiveHolder: number;
  /** Posts the fleet finished per second during the fault ÷ before it (undefined where not measured). */
  throughput?: { before: number; during: number };
  /** Scenario-specific figures. */
  notes: string[];
  violations: string[];
}

/** serve's pino lines (JSON), skipping anything else it printed. */
export function logLines(file: string): any[] {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  return text.split("\n").flatMap((line) => {
    if (!line.startsWith("{")) return [];
    try {
      return [JSON.parse(line)];
    } catch {
      return []; // a line cut by a SIGKILL
    }
  });
}

export interface JudgeOptions {
  fault: string;
  /** Members the fault made unhealthy (frozen, killed): their own actions may be recovered or interrupted. */
  unhealthy?: string[];
  /** Every acknowledged action must end within this, through a member still up. */
  settleMs?: number;
  throughput?: { before: number; during: number };
  notes?: string[];
  violations?: string[];
}

interface ActionRow {
  id: string;
  status: string;
  error_code: string | null;
  error_message: string | null;
  params: string;
  committed_at: string | null;
}

/** Settles every acknowledged action, then checks the invariants of DESIGN §11's "Faults a fleet meets". */
export async function judge(fleet: Fleet, clients: Clients, options: JudgeOptions): Promise<Verdict> {
  const unhealthy = new Set(options.unhealthy ?? []);
  const violations = [...(options.violations ?? [])];
  const violate = (message: string): void => void (violations.includes(message) || violations.push(message));
  const up = fleet.members.filter((member) => member.alive()).map((member) => member.label);
  const deadline = Date.now() + (options.settleMs ?? 90_000);
  if (up.length > 0) await Promise.all(clients.acknowledged.map((tracked) => clients.follow(tracked, up, deadline)));
  // Actions nobody was told of (created by a member while its client had left) must end too.
  const open = async (): Promise<{ id: string }[]> => fleet.store.all<{ id: string }>("SELECT id FROM actions WHERE status IN ('queued', 'running', 'needs_input')");
  while (up.length > 0 && (await open()).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
  for (const member of fleet.members) {
    if (member.diedOnItsOwn) violate(`coordinator ${member.label} died on its own (code ${member.diedOnItsOwn.code}, signal ${member.diedOnItsOwn.signal}): ${lastError(member.proc.output())}`);
  }

  const rows = await fleet.store.all<ActionRow>("SELECT id, status, error_code, error_message, params, committed_at FROM actions WHERE type = 'post'");
  const byId = new Map(rows.map((row) => [row.id, row]));
  const byText = new Map<string, ActionRow[]>();
  for (const row of rows) {
    const text = String(JSON.parse(row.params).text);
    byText.set(text, [...(byText.get(text) ?? []), row]);
  }

  const stuck = await stuckDetails(fleet, rows.filter((row) => !TERMINAL.has(row.status)).map((row) => row.id));
  let lost = 0;
  for (const tracked of clients.acknowledged) {
    const row = byId.get(tracked.id!);
    if (!row) {
      lost += 1;
      violate(`lost: ${tracked.id} (post #${tracked.n}) was acknowledged and is not in the store`);
    } else if (!TERMINAL.has(row.status)) {
      lost += 1;
      violate(`stuck: ${tracked.id} (post #${tracked.n}) is still ${row.status} after the fault${up.length > 0 ? "" : " (no coordinator left to end it)"}; ${stuck.get(row.id)}`);
    }
  }
  for (const [text, actions] of byText) {
    const tracked = clients.posts.find((candidate) => candidate.text === text);
    if (actions.length > 1) violate(`post #${tracked?.n ?? "?"} (key ${tracked?.key ?? "none"}) became ${actions.length} actions: ${actions.map((row) => `${row.id} ${row.status} ${row.error_code ?? ""}`.trim()).join(", ")}`);
  }
  for (const row of rows) if (!TERMINAL.has(row.status) && !clients.acknowledged.some((tracked) => tracked.id === row.id)) violate(`stuck: ${row.id} (no client was given it) is still ${row.status} after the fault; ${stuck.get(row.id)}`);

  // The sandbox's own record: each text at most once; a refused duplicate is a second submission.
  const posts = new Map<string, number>();
  for (const handle of new Set(clients.posts.map((tracked) => tracked.account.handle))) {
    const response = await fetch(`${fleet.sandbox.url}/_sandbox/posts?author=${handle}`);
    for (const post of (await response.json()) as { text: string }[]) posts.set(post.text, (posts.get(post.text) ?? 0) + 1);
  }
  let doubles = 0;
  for (const [text, count] of posts) {
    if (count < 2) continue;
    doubles += count - 1;
    violate(`posted ${count} times: ${JSON.stringify(text)}`);
  }
  for (const row of rows) {
    if (row.status === "failed" && row.error_message?.includes("You already posted this")) {
      doubles += 1;
      violate(`${row.id} submitted a text already posted (the sandbox refused the duplicate; a platform without that check posts twice)`);
    }
    if (row.status === "succeeded" && posts.get(String(JSON.parse(row.params).text)) !== 1) violate(`${row.id} succeeded but its text is not on the sandbox`);
  }

  // Recoveries, by the member whose runner held the action then.
  const recovered = fleet.members.flatMap((member) => logLines(member.logFile).filter((line) => line.msg === "recovered an action of a runner that is gone").map((line) => ({ ...line, by: member.label })));
  const holderOf = (runnerId: string | undefined): string => (runnerId && fleet.runners.get(runnerId)) || "?";
  let takenFromLiveHolder = 0;
  for (const line of recovered) {
    const holder = holderOf(line.runner_id);
    if (unhealthy.has(holder)) continue;
    takenFromLiveHolder += 1;
    violate(`${line.action_id} was taken from ${holder === "?" ? "an unknown runner" : `healthy coordinator ${holder}`} by ${line.by} (${line.from} → ${line.committed ? "failed as interrupted" : "queued"})`);
  }
  let interrupted = 0;
  for (const row of rows) {
    if (row.status !== "failed" || !row.error_message?.startsWith("Interrupted")) continue;
    const holders = recovered.filter((line) => line.action_id === row.id).map((line) => holderOf(line.runner_id));
    if (holders.length > 0 && holders.every((holder) => unhealthy.has(holder))) continue;
    interrupted += 1;
    const note = row.error_message === INTERRUPTED_AFTER_COMMIT ? "past its commit point" : row.error_message;
    violate(`${row.id} of ${holders.length > 0 ? `coordinator ${holders.join("/")}` : "a coordinator that was not stopped"} failed as interrupted (${note})`);
  }

  // The slowest create, request by request: a coordinator that holds a request for long shows here.
  const slowest = clients.posts.map((tracked) => ({ tracked, ms: (tracked.ackAt ?? Date.now()) - tracked.sentAt })).sort((a, b) => b.ms - a.ms)[0];
  const slowestNote = slowest
    ? [`slowest create: post #${slowest.tracked.n} ${(slowest.ms / 1000).toFixed(1)} s (${slowest.tracked.attempts.map((attempt) => `${attempt.via} ${(attempt.ms / 1000).toFixed(1)} s ${attempt.outcome}`).join(", ")})`]
    : [];
  const requeues = await requeueCounts(fleet);
  const most = Math.max(0, ...requeues.values());
  const notes = [...(options.notes ?? []), ...slowestNote, `${recovered.length} "recovered an action of a runner that is gone" log lines`, `${[...requeues.values()].reduce((a, b) => a + b, 0)} returns to queued over ${requeues.size} actions (most for one action: ${most})`];
  return { fault: options.fault, actions: clients.acknowledged.length, doubles, lost, interrupted, takenFromLiveHolder, ...(options.throughput ? { throughput: options.throughput } : {}), notes, violations };
}

/**
 * What holds each action still open (its runner, that runner's member and lease, when it last
 * changed) and what the members logged of it: a stuck action's report says where to look.
 */
async function stuckDetails(fleet: Fleet, ids: string[]): Promise<Map<string, string>> {
  const details = new Map<string, string>();
  if (ids.length === 0) return details;
  // Each member's log read once, each line with its text to search.
  const logs = fleet.members.map((member) => ({ label: member.label, lines: logLines(member.logFile).map((line) => ({ line, text: JSON.stringify(line) })) }));
  for (const id of ids) {
    const [row] = await fleet.store.all<{ runner_id: string | null; lease: number; committed_at: string | null; updated_at: string; lease_expires_at: string | null }>(
      "SELECT a.runner_id, a.lease, a.committed_at, a.updated_at, r.lease_expires_at FROM actions a LEFT JOIN runners r ON r.id = a.runner_id WHERE a.id = $1",
      [id],
    );
    const holder = row?.runner_id ? `runner ${row.runner_id} (${fleet.runners.get(row.runner_id) ?? "?"}, lease until ${row.lease_expires_at ?? "gone"})` : "no runner";
    const logged = logs.flatMap(({ label, lines }) => lines.filter(({ text }) => text.includes(id)).map(({ line }) => `${label}: ${line.msg}${line.err?.message ? ` (${line.err.message})` : ""}`));
    details.set(id, `held by ${holder}, lease number ${row?.lease}, committed ${row?.committed_at ?? "no"}, updated ${row?.updated_at}; logged: ${logged.slice(-6).join(" | ") || "nothing"}`);
  }
  return details;
}

/** Per action, how many times the outbox saw it go back to `queued` from `running` or `needs_input`. */
async function requeueCounts(fleet: Fleet): Promise<Map<string, number>> {
  const rows = await fleet.store.all<{ subject_id: string; data: string }>("SELECT subject_id, data FROM events WHERE type = 'action.updated' ORDER BY seq");
  const last = new Map<string, string>();
  const counts = new Map<string, number>();
  for (const row of rows) {
    const status = String(JSON.parse(row.data).status);
    const before = last.get(row.subject_id);
    if (status === "queued" && (before === "running" || before === "needs_input")) counts.set(row.subject_id, (counts.get(row.subject_id) ?? 0) + 1);
    last.set(row.subject_id, status);
  }
  return counts;
}

function lastError(output: string): string {
  const lines = output.split("\n").filter((line) => /error/i.test(line));
  return (lines.slice(-3).join(" | ") || output.slice(-600)).slice(0, 800);
}

/** The table the closing note quotes: printed, and kept in test-artifacts/faults/<name>.md. */
export function report(name: string, verdict: Verdict): string {
  const ratio = verdict.throughput ? (verdict.throughput.before > 0 ? (verdict.throughput.during / verdict.throughput.before).toFixed(2) : "n/a") : "—";
  const rate = verdict.throughput ? ` (${verdict.throughput.during.toFixed(2)}/s ÷ ${verdict.throughput.before.toFixed(2)}/s)` : "";
  const lines = [
    "| fault | actions | doubles | lost | interrupted | taken from live holder | throughput during ÷ before |",
    "|---|---|---|---|---|---|---|",
    `| ${verdict.fault} | ${verdict.actions} | ${verdict.doubles} | ${verdict.lost} | ${verdict.interrupted} | ${verdict.takenFromLiveHolder} | ${ratio}${rate} |`,
    "",
    ...verdict.notes.map((note) => `- ${note}`),
    ...(verdict.violations.length === 0 ? ["- every invariant held"] : [`- BROKEN (${verdict.violations.length}):`, ...verdict.violations.map((line) => `  - ${line}`)]),
  ];
  const text = lines.join("\n");
  const dir = join(import.meta.dirname, "..", "..", "test-artifacts", "faults");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.md`), `${text}\n`);
  return text;
}
