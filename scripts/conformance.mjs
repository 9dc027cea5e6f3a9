#!/usr/bin/env node
/**
 * `npm run conformance`: the official MCP conformance suite, in both protocol eras, and the
 * Inspector's strict `tools/list`, against this service as built (`dist/`).
 *
 * - Installs, once, into scratch directories (two versions of one package cannot share one):
 *   `node@22` (the suites need Node ≥ 22), `@modelcontextprotocol/inspector` and
 *   `@modelcontextprotocol/conformance` 0.1.16 in one; `@modelcontextprotocol/conformance`
 *   0.2.0-alpha.12 in the other (run by the same Node 22).
 * - Starts `serve` on a fresh data dir and a free port, and a local proxy that adds the first
 *   admin key as `Authorization: Bearer` (the suites send no key), streaming both ways.
 * - Legs, one after the other against that proxy:
 *   2025-11-25: 0.1.16's server scenarios of the active suite (initialize, sessions);
 *   2026-07-28: 0.2.0-alpha.12 `--requirements 2026-07-28`, exactly what that revision requires,
 *   run at its stateless wire (per-request `_meta`, no initialize), plus the scenarios the
 *   requirement set runs without scoring them (the tasks extension, pending ones).
 * - Then `inspector --cli --strict tools/list` three times: over stdio in the legacy era, over
 *   stdio in the modern era (`--protocol-era modern` pins 2026-07-28 and fails rather than fall
 *   back), and over HTTP in the modern era with the Bearer key, through a proxy that records each
 *   request's MCP-Protocol-Version (all must be 2026-07-28).
 *
 * CONFORMANCE_SUITE=all|pending runs another 0.1.16 suite than `active` (the 2026 leg is fixed by
 * its requirement set); CONFORMANCE_ERA=2025-11-25|2026-07-28 runs one leg only;
 * CONFORMANCE_KEEP_RESULTS=1 keeps the suites' results directories (their paths are printed).
 *
 * Each suite judges its own baseline (`--expected-failures`, one file a leg): a scenario fails
 * when any of its checks is FAILURE or WARNING; the run fails on a failing scenario not listed
 * (each entry says why it fails, as a `# comment`) and on a listed one that now passes (a stale
 * entry). The 2026 file may also list `scenario:check-id`, which excuses that check alone.
 * Scenarios the requirement set does not score are printed, never judged. This script applies
 * the same rules to print every verdict, and also fails when the Inspector reports any schema
 * error or warning, or exits non-zero.
 *
 * Results: a suite writes `<out>/server-<scenario>-<ISO time with : and . as ->/checks.json`, an
 * array of `{ id, name, description, status: SUCCESS|FAILURE|WARNING|SKIPPED|INFO, errorMessage?,
 * details? }`; its stdout ends with `✓|✗ <scenario>: N passed, M failed` lines and the baseline
 * verdict. The Inspector runs with `--format json`: one `{ result, schemaFindings? }` object on
 * stdout (schemaFindings, with --strict, lists `{ toolName, findings: [{ severity, issue, ... }] }`
 * for tools that have any), and the human report on stderr.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request } from "node:http";
import { tmpdir } from "node:os";
import { clearTimeout, setTimeout } from "node:timers";
import { dirname, join } from "node:path";
import { URL, fileURLToPath } from "node:url";

const VERSIONS = { node: "22.23.3", inspector: "2.12.0", conformance2025: "0.1.16", conformance2026: "0.2.0-alpha.12" };
const MODERN = "2026-07-28";
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const CLI = join(ROOT, "dist", "cli.js");
const SUITE = process.env.CONFORMANCE_SUITE ?? "active";
const SUITE_TIMEOUT_MS = 10 * 60_000;
const INSPECTOR_TIMEOUT_MS = 2 * 60_000;
const CONFORMANCE = "@modelcontextprotocol/conformance";

/** One run of one conformance version; `requirements` names the revision whose set it runs. */
const LEGS = [
  { era: "2025-11-25", version: VERSIONS.conformance2025, args: ["--suite", SUITE], expected: "conformance-expected.yaml" },
  { era: MODERN, version: VERSIONS.conformance2026, args: ["--requirements", MODERN], requirements: MODERN, expected: "conformance-expected-2026.yaml" },
]
  .filter((leg) => !process.env.CONFORMANCE_ERA || leg.era === process.env.CONFORMANCE_ERA)
  .map((leg) => ({ ...leg, scratch: scratchDir(leg.version), expected: join(ROOT, "scripts", leg.expected) }));

const children = [];
const cleanups = [];
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL");
  for (const cleanup of cleanups) cleanup();
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130));

function scratchDir(conformanceVersion) {
  return join(tmpdir(), `action-service-conformance-${conformanceVersion}`);
}

/** A fresh temporary directory, removed on exit. */
function temporaryDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** This environment without ACTION_SERVICE_* settings, so the user's own do not leak into the runs. */
function cleanEnv(extra) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("ACTION_SERVICE_")));
  return { ...env, ...extra };
}

/** Runs a command without blocking the event loop (the proxies serve the suites from this process). */
function run(command, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    children.push(child);
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeout);
    child.once("error", reject);
    child.once("close", (status, signal) => {
      clearTimeout(timer);
      resolve({ status: status ?? `signal ${signal}`, stdout, stderr });
    });
  });
}

function installedVersion(dir, name) {
  try {
    return JSON.parse(readFileSync(join(dir, "node_modules", name, "package.json"), "utf8")).version;
  } catch {
    return undefined;
  }
}

/** Installs `packages` ({ name: version }) into `dir` unless they are there; resolves with its `.bin`. */
function install(dir, packages, bins) {
  const bin = join(dir, "node_modules", ".bin");
  const ready = Object.entries(packages).every(([name, version]) => installedVersion(dir, name) === version) && bins.every((name) => existsSync(join(bin, name)));
  if (ready) return Promise.resolve(bin);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "conformance-scratch", private: true }));
  const specs = Object.entries(packages).map(([name, version]) => `${name}@${version}`);
  console.log(`Installing ${specs.join(", ")} into ${dir} …`);
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", ...specs], { cwd: dir, stdio: "inherit" });
    child.once("error", reject);
    child.once("close", (status) => (status === 0 && bins.every((name) => existsSync(join(bin, name))) ? resolve(bin) : reject(new Error(`npm install failed (${status})`))));
  });
}

/** `serve` on a fresh data dir; resolves with its URL and the admin key it prints on first start. */
function startServe() {
  const dataDir = temporaryDir("action-service-conformance-data-");
  const child = spawn(process.execPath, [CLI, "serve"], {
    env: cleanEnv({ ACTION_SERVICE_DATA_DIR: dataDir, ACTION_SERVICE_PORT: "0", ACTION_SERVICE_LOG_LEVEL: "warn", ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "100000" }),
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`serve printed no URL and key within 60 s: ${output}`)), 60_000);
    child.stdout.setEncoding("utf8").on("data", (chunk) => {
      output += chunk;
      const url = /listening on (http:\/\/\S+)/.exec(output)?.[1];
      // The key's own line, whole (a chunk may end inside it).
      const key = /^(as_[A-Za-z0-9_-]+)\r?$/m.exec(output.slice(0, output.lastIndexOf("\n") + 1))?.[1];
      if (url && key) {
        clearTimeout(timer);
        resolve({ url, key });
      }
    });
    child.once("exit", (code) => reject(new Error(`serve exited (${code}): ${output}`)));
  });
}

/**
 * A proxy to the service's /mcp, streaming both ways, that adds `key` as the Bearer credential
 * when given and hands each request's headers to `onRequest`. Host and Origin pass through
 * unchanged, so dns-rebinding-protection tests the service's own check (it accepts loopback
 * names on any port when started with port 0).
 */
function startProxy(target, { key, onRequest } = {}) {
  const upstream = new URL(target);
  const server = createServer((incoming, outgoing) => {
    onRequest?.(incoming.method, incoming.headers);
    const headers = key ? { ...incoming.headers, authorization: `Bearer ${key}` } : incoming.headers;
    const forwarded = request({ host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers }, (response) => {
      outgoing.writeHead(response.statusCode ?? 502, response.headers);
      outgoing.flushHeaders();
      response.pipe(outgoing);
    });
    forwarded.on("error", (error) => {
      if (!outgoing.headersSent) outgoing.writeHead(502);
      outgoing.end(String(error));
    });
    // The client went away (e.g. closed an SSE stream): close the upstream request too.
    outgoing.on("close", () => forwarded.destroy());
    incoming.pipe(forwarded);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${server.address().port}/mcp`, close: () => server.close() })));
}

/**
 * A leg's baseline: `  - scenario  # reason` or `  - scenario:check-id  # reason` lines under
 * `server:` (the suite reads the list, we read the reasons). Keys are `scenario` or `scenario:check`.
 */
function expectedFailures(file) {
  const entries = new Map();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const match = /^\s+-\s+([\w-]+(?::[\w-]+)?)\s*(?:#\s*(.*))?$/.exec(line);
    if (match) entries.set(match[1], match[2] ?? "(no reason given)");
  }
  return entries;
}

/** The server scenarios a requirement set runs without scoring, with the set's reason (extension, pending, …). */
function notScored(leg) {
  if (!leg.requirements) return new Map();
  const file = join(leg.scratch, "node_modules", CONFORMANCE, "requirements", `${leg.requirements}.yaml`);
  const text = readFileSync(file, "utf8");
  const entries = [...text.matchAll(/^\s+-\s+scenario:\s*(\S+)\s*\n\s+leg:\s*(\w+)\s*\n\s+reason:\s*([\w-]+)/gm)];
  return new Map(entries.filter(([, , role]) => role === "server").map(([, name, , reason]) => [name, reason]));
}

const SEVERITY = { FAILURE: 3, WARNING: 2, SUCCESS: 1 };
const failing = (check) => check.status === "FAILURE" || check.status === "WARNING";

/** One verdict per check id, the most severe of its occurrences (as the suite's baseline does). */
function collapse(checks) {
  const byId = new Map();
  for (const check of checks.filter((c) => c.status !== "INFO")) {
    const seen = byId.get(check.id);
    if (!seen || (SEVERITY[check.status] ?? 0) >= (SEVERITY[seen.status] ?? 0)) byId.set(check.id, check);
  }
  return [...byId.values()];
}

function describeCheck(check) {
  const detail = check.errorMessage ?? check.details?.message ?? check.description;
  return `${check.status === "WARNING" ? "warning " : ""}${check.id}: ${detail}`;
}

/** A pass that only met the "not found" answer for a tool this server does not have. */
function vacuousPass(checks) {
  for (const check of checks.filter((c) => c.status === "SUCCESS")) {
    const tool = /"(?:text|message)":"(?:MCP error -?\d+: )?(Tool \S+ not found)/.exec(JSON.stringify(check.details ?? {}))?.[1];
    if (tool) return `vacuous: ${tool}`;
  }
  return undefined;
}

async function runSuite(leg, nodeBin, url) {
  const outputDir = mkdtempSync(join(tmpdir(), `action-service-conformance-results-${leg.era}-`));
  if (process.env.CONFORMANCE_KEEP_RESULTS) console.log(`Results of ${leg.era} (kept): ${outputDir}`);
  else cleanups.push(() => rmSync(outputDir, { recursive: true, force: true }));
  const suite = await run(join(nodeBin, "node"), [join(leg.scratch, "node_modules", ".bin", "conformance"), "server", "--url", url, ...leg.args, "--expected-failures", leg.expected, "-o", outputDir], {
    env: { ...process.env, PATH: `${nodeBin}:${process.env.PATH}` },
    timeout: SUITE_TIMEOUT_MS,
  });
  const scenarios = new Map();
  for (const file of readdirSync(outputDir, { recursive: true }).map(String).filter((file) => file.endsWith("checks.json"))) {
    const name = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(dirname(file))?.[1] ?? dirname(file);
    scenarios.set(name, { name, checks: collapse(JSON.parse(readFileSync(join(outputDir, file), "utf8"))) });
  }
  // A scenario that threw is in the summary (`✗ name: 0 passed, 1 failed`) but wrote no checks.json.
  const output = suite.stdout + suite.stderr;
  for (const [, mark, name] of output.matchAll(/^([✓✗]) ([\w-]+): \d+ passed, \d+ failed/gm)) {
    if (!scenarios.has(name)) scenarios.set(name, { name, checks: [{ id: "scenario", status: mark === "✓" ? "SUCCESS" : "FAILURE", errorMessage: "no checks.json written (the scenario threw; see the suite's output)" }] });
  }
  return { scenarios: [...scenarios.values()].sort((a, b) => a.name.localeCompare(b.name)), status: suite.status, output };
}

/** The verdict on one scenario under the leg's baseline, by the suite's own rules. */
function judge(scenario, expected, unscored) {
  const bad = scenario.checks.filter(failing);
  const counts = `${scenario.checks.length - bad.length}/${scenario.checks.length} checks`;
  if (unscored.has(scenario.name)) {
    const shown = bad.slice(0, 3).map(describeCheck).concat(bad.length > 3 ? [`… ${bad.length - 3} more`] : []);
    return { mark: bad.length ? "FAIL (not scored)" : "pass (not scored)", why: [`${unscored.get(scenario.name)}; ${counts}`, ...shown] };
  }
  if (expected.has(scenario.name)) {
    return bad.length ? { mark: "FAIL (expected)", why: [`${expected.get(scenario.name)} [${bad.map(describeCheck).join("; ")}]`] } : { mark: "pass (STALE)", stale: [scenario.name], why: [] };
  }
  const excused = new Map([...expected].filter(([key]) => key.startsWith(`${scenario.name}:`)).map(([key, reason]) => [key.slice(scenario.name.length + 1), reason]));
  const unexpected = bad.filter((check) => !excused.has(check.id));
  const stale = [...excused.keys()].filter((id) => scenario.checks.find((check) => check.id === id)?.status === "SUCCESS").map((id) => `${scenario.name}:${id}`);
  const why = [...unexpected.map(describeCheck), ...stale.map((key) => `STALE baseline entry ${key}: this check now passes`)];
  for (const check of bad.filter((c) => excused.has(c.id))) why.push(`expected ${check.id}: ${excused.get(check.id)}`);
  const mark = unexpected.length ? "FAIL" : stale.length ? "pass (STALE)" : bad.length ? "pass*" : "pass";
  if (mark === "pass") why.push(vacuousPass(scenario.checks) ?? "");
  return { mark, unexpected: unexpected.length > 0, stale, why: [...(bad.length || stale.length ? [counts] : []), ...why].filter(Boolean) };
}

function report(leg, result) {
  const expected = expectedFailures(leg.expected);
  const unscored = notScored(leg);
  const verdicts = result.scenarios.map((scenario) => ({ scenario, ...judge(scenario, expected, unscored) }));
  const how = leg.requirements ? `--requirements ${leg.requirements}` : `${SUITE} suite`;
  console.log(`\nMCP conformance ${leg.era} (${CONFORMANCE} ${leg.version}, ${how}):`);
  for (const { scenario, mark, why } of verdicts) {
    console.log(`  ${mark.padEnd(18)} ${scenario.name}`);
    for (const line of why) console.log(`  ${" ".repeat(18)} ${line}`);
  }
  if (verdicts.length === 0) console.log(result.output);
  const ran = new Set(result.scenarios.map((scenario) => scenario.name));
  for (const key of expected.keys()) if (!ran.has(key.split(":")[0])) console.log(`  (listed in ${leg.expected.split("/").pop()} but not run: ${key})`);
  const scored = verdicts.filter(({ scenario }) => !unscored.has(scenario.name));
  const unexpected = scored.filter((verdict) => verdict.mark === "FAIL" || verdict.unexpected).length;
  const stale = scored.flatMap((verdict) => verdict.stale ?? []).length;
  const passing = scored.filter((verdict) => verdict.mark.startsWith("pass") && verdict.mark !== "pass (STALE)").length;
  const unscoredPassing = verdicts.length - scored.length - verdicts.filter((verdict) => verdict.mark === "FAIL (not scored)").length;
  console.log(
    `  ${passing} of ${scored.length} scenarios pass (pass* = only baselined checks fail); ${unexpected} unexpected failures; ${stale} stale baseline entries; ` +
      `${unscored.size ? `not scored: ${unscoredPassing} of ${verdicts.length - scored.length} pass; ` : ""}suite exit ${result.status}.`,
  );
  return result.status === 0 && unexpected === 0 && stale === 0 && scored.length > 0;
}

/** `inspector --cli --strict tools/list` over stdio (a fresh data dir) or HTTP, in one protocol era. */
async function runInspector(bin, { era, http }) {
  const home = temporaryDir("action-service-inspector-");
  const target = http
    ? ["--transport", "http", "--server-url", http.url, "--header", `Authorization: Bearer ${http.key}`]
    : ["-e", `ACTION_SERVICE_DATA_DIR=${join(home, "data")}`, "-e", "ACTION_SERVICE_PORT=0", process.execPath, CLI, "mcp"];
  const inspector = await run(join(bin, "mcp-inspector"), ["--cli", "--strict", "--format", "json", "--protocol-era", era, "--method", "tools/list", ...target], {
    // Node 22 runs the Inspector (its shebang finds `node` on PATH); the service runs on this Node.
    // HOME is scratch: the Inspector keeps its catalog and client settings there.
    env: { ...cleanEnv(), HOME: home, PATH: `${bin}:${process.env.PATH}`, MCP_CATALOG_PATH: join(home, "catalog.json") },
    timeout: INSPECTOR_TIMEOUT_MS,
  });
  let envelope;
  try {
    envelope = JSON.parse(inspector.stdout);
  } catch {
    envelope = undefined;
  }
  const findings = (envelope?.schemaFindings ?? []).flatMap(({ toolName, findings }) => findings.map((finding) => ({ toolName, ...finding })));
  return {
    label: `${http ? "HTTP" : "stdio"}, ${era} era`,
    status: inspector.status,
    parsed: envelope !== undefined,
    tools: envelope?.result?.tools?.length,
    errors: findings.filter((finding) => finding.severity === "error").length,
    warnings: findings.filter((finding) => finding.severity !== "error").length,
    findings: findings.map((finding) => `${finding.severity} in tool ${finding.toolName}: ${finding.issue}`),
    stderr: inspector.stderr.trim(),
  };
}

/** The Inspector over HTTP through a proxy that records each request's protocol version. */
async function runInspectorOverHttp(bin, service, era) {
  const versions = [];
  const recorder = await startProxy(`${service.url}/mcp`, { onRequest: (method, headers) => versions.push(`${method} ${headers["mcp-protocol-version"] ?? "(none)"}`) });
  try {
    const result = await runInspector(bin, { era, http: { url: recorder.url, key: service.key } });
    const wrongEra = versions.filter((line) => !line.endsWith(` ${MODERN}`));
    return { ...result, note: `${versions.length} requests${wrongEra.length ? `, NOT all ${MODERN}: ${wrongEra.join(", ")}` : `, all MCP-Protocol-Version ${MODERN}`}`, wrongEra: wrongEra.length > 0 };
  } finally {
    recorder.close();
  }
}

const started = Date.now();
if (!existsSync(CLI)) throw new Error("dist/cli.js is missing: run `npm run build` first.");
const tools = await install(scratchDir(VERSIONS.conformance2025), { node: VERSIONS.node, [CONFORMANCE]: VERSIONS.conformance2025, "@modelcontextprotocol/inspector": VERSIONS.inspector }, ["node", "conformance", "mcp-inspector"]);
for (const leg of LEGS) if (leg.version !== VERSIONS.conformance2025) await install(leg.scratch, { [CONFORMANCE]: leg.version }, ["conformance"]);
const service = await startServe();
const proxy = await startProxy(`${service.url}/mcp`, { key: service.key });
const results = [];
for (const leg of LEGS) results.push([leg, await runSuite(leg, tools, proxy.url)]);
proxy.close();
const inspections = [await runInspector(tools, { era: "legacy" }), await runInspector(tools, { era: "modern" }), await runInspectorOverHttp(tools, service, "modern")];

let ok = true;
for (const [leg, result] of results) ok = report(leg, result) && ok;
console.log("\nInspector --strict tools/list:");
for (const inspection of inspections) {
  console.log(`  ${inspection.label}: exit ${inspection.status}, ${inspection.tools ?? "?"} tools, ${inspection.errors} errors, ${inspection.warnings} warnings${inspection.note ? ` (${inspection.note})` : ""}`);
  for (const finding of inspection.findings) console.log(`    ${finding}`);
  if (!inspection.parsed || inspection.status !== 0) console.log(`    (output not understood or non-zero exit) ${inspection.stderr}`);
  ok &&= inspection.status === 0 && inspection.parsed && inspection.errors === 0 && inspection.warnings === 0 && !inspection.wrongEra;
}
console.log(`\n(${((Date.now() - started) / 1000).toFixed(0)} s)`);
process.exit(ok ? 0 : 1);
