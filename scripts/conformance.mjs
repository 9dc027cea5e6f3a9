#!/usr/bin/env node
/**
 * `npm run conformance`: the official MCP conformance suite and the Inspector's strict check,
 * against this service as built (`dist/`).
 *
 * - Installs, once, into a scratch directory: `node@22` (the suite needs Node ≥ 22),
 *   `@modelcontextprotocol/conformance` and `@modelcontextprotocol/inspector` (pinned below).
 * - Starts `serve` on a fresh data dir and a free port, and a local proxy that adds the
 *   first admin key as `Authorization: Bearer` (the suite sends no key), streaming both ways.
 * - Runs every server scenario of the active suite, then `inspector --cli --strict tools/list`
 *   over stdio, and prints each scenario's result with the reason of any failure.
 *
 * CONFORMANCE_SUITE=all|pending runs another suite than `active`; CONFORMANCE_KEEP_RESULTS=1
 * keeps the suite's results directory (its path is printed).
 *
 * The suite itself judges the baseline (`--expected-failures scripts/conformance-expected.yaml`):
 * a scenario fails when any of its checks is FAILURE or WARNING; the run fails on a failing
 * scenario not listed there (each entry says why it fails, as a `# comment`) and on a listed
 * one that now passes (a stale entry). It also fails when the Inspector reports any schema
 * error or warning, or exits non-zero.
 *
 * Results: the suite writes `<out>/server-<scenario>-<ISO time with : and . as ->/checks.json`,
 * an array of `{ id, name, description, status: SUCCESS|FAILURE|WARNING|INFO, errorMessage?,
 * details? }`; its stdout ends with `✓|✗ <scenario>: N passed, M failed` lines and the
 * baseline verdict. The Inspector runs with `--format json`: one `{ result, schemaFindings? }`
 * object on stdout (schemaFindings, with --strict, lists `{ toolName, findings: [{ severity,
 * issue, ... }] }` for tools that have any), and the human report on stderr.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request } from "node:http";
import { tmpdir } from "node:os";
import { clearTimeout, setTimeout } from "node:timers";
import { dirname, join } from "node:path";
import { URL, fileURLToPath } from "node:url";

const VERSIONS = { node: "22.23.3", conformance: "0.1.16", inspector: "2.12.0" };
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const CLI = join(ROOT, "dist", "cli.js");
const EXPECTED = join(ROOT, "scripts", "conformance-expected.yaml");
const SCRATCH = join(tmpdir(), `action-service-conformance-${VERSIONS.conformance}`);
const SUITE = process.env.CONFORMANCE_SUITE ?? "active";
const SUITE_TIMEOUT_MS = 10 * 60_000;
const INSPECTOR_TIMEOUT_MS = 2 * 60_000;

const children = [];
const cleanups = [];
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL");
  for (const cleanup of cleanups) cleanup();
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130));

/** This environment without ACTION_SERVICE_* settings, so the user's own do not leak into the runs. */
function cleanEnv(extra) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("ACTION_SERVICE_")));
  return { ...env, ...extra };
}

/** Runs a command without blocking the event loop (the proxy serves the suite from this process). */
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

function installedVersion(name) {
  try {
    return JSON.parse(readFileSync(join(SCRATCH, "node_modules", name, "package.json"), "utf8")).version;
  } catch {
    return undefined;
  }
}

function install() {
  const bin = join(SCRATCH, "node_modules", ".bin");
  const wanted = { node: VERSIONS.node, "@modelcontextprotocol/conformance": VERSIONS.conformance, "@modelcontextprotocol/inspector": VERSIONS.inspector };
  const ready = Object.entries(wanted).every(([name, version]) => installedVersion(name) === version) && ["node", "conformance", "mcp-inspector"].every((name) => existsSync(join(bin, name)));
  if (ready) return Promise.resolve(bin);
  mkdirSync(SCRATCH, { recursive: true });
  writeFileSync(join(SCRATCH, "package.json"), JSON.stringify({ name: "conformance-scratch", private: true }));
  const packages = Object.entries(wanted).map(([name, version]) => `${name}@${version}`);
  console.log(`Installing ${packages.join(", ")} into ${SCRATCH} …`);
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", ...packages], { cwd: SCRATCH, stdio: "inherit" });
    child.once("error", reject);
    child.once("close", (status) => (status === 0 && existsSync(join(bin, "node")) ? resolve(bin) : reject(new Error(`npm install failed (${status})`))));
  });
}

/** `serve` on a fresh data dir; resolves with its URL and the admin key it prints on first start. */
function startServe() {
  const dataDir = mkdtempSync(join(tmpdir(), "action-service-conformance-data-"));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
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
 * A proxy to the service's /mcp that adds the key, streaming both ways. Host and Origin pass
 * through unchanged, so dns-rebinding-protection tests the service's own check (it accepts
 * loopback names on any port when started with port 0).
 */
function startProxy(target, key) {
  const upstream = new URL(target);
  const server = createServer((incoming, outgoing) => {
    const headers = { ...incoming.headers, authorization: `Bearer ${key}` };
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

/** The expected failures: `  - scenario  # reason` lines under `server:` (the suite reads the list, we read the reasons). */
function expectedFailures() {
  const entries = new Map();
  for (const line of readFileSync(EXPECTED, "utf8").split("\n")) {
    const match = /^\s+-\s+([\w-]+)\s*(?:#\s*(.*))?$/.exec(line);
    if (match) entries.set(match[1], match[2] ?? "(no reason given)");
  }
  return entries;
}

function describeCheck(check) {
  const detail = check.errorMessage ?? check.details?.message ?? check.description;
  return `${check.status === "WARNING" ? "warning " : ""}${check.id}: ${detail}`;
}

async function runConformance(bin, url) {
  const outputDir = mkdtempSync(join(tmpdir(), "action-service-conformance-results-"));
  if (process.env.CONFORMANCE_KEEP_RESULTS) console.log(`Results (kept): ${outputDir}`);
  else cleanups.push(() => rmSync(outputDir, { recursive: true, force: true }));
  const suite = await run(join(bin, "node"), [join(bin, "conformance"), "server", "--url", url, "--suite", SUITE, "--expected-failures", EXPECTED, "-o", outputDir], {
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
    timeout: SUITE_TIMEOUT_MS,
  });
  const results = new Map();
  for (const file of readdirSync(outputDir, { recursive: true }).map(String).filter((file) => file.endsWith("checks.json"))) {
    const name = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(dirname(file))?.[1] ?? dirname(file);
    const checks = JSON.parse(readFileSync(join(outputDir, file), "utf8"));
    const bad = checks.filter((check) => check.status === "FAILURE" || check.status === "WARNING");
    // A pass on a tool this server does not have (the check only looked at the shape of the "not found" error result).
    const missing = checks.map((check) => /^(?:MCP error -?\d+: )?(Tool \S+ not found)/.exec(check.details?.result?.isError ? (check.details.result.content?.[0]?.text ?? "") : "")?.[1]).find(Boolean);
    results.set(name, { name, passed: bad.length === 0, checks: checks.filter((check) => check.status !== "INFO").length, reason: bad.map(describeCheck).join("; "), note: missing && `vacuous: ${missing}` });
  }
  // A scenario that threw is in the summary (`✗ name: 0 passed, 1 failed`) but wrote no checks.json.
  const output = suite.stdout + suite.stderr;
  for (const [, mark, name] of output.matchAll(/^([✓✗]) ([\w-]+): \d+ passed, \d+ failed/gm)) {
    if (!results.has(name)) results.set(name, { name, passed: mark === "✓", checks: 0, reason: "no checks.json written (the scenario threw; see the suite's output)" });
  }
  const stale = [...output.matchAll(/^\s+✓ ([\w-]+)$/gm)].map((match) => match[1]);
  return { results: [...results.values()], status: suite.status, stale, output };
}

async function runInspector(bin) {
  const dataDir = mkdtempSync(join(tmpdir(), "action-service-inspector-"));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const inspector = await run(
    join(bin, "mcp-inspector"),
    ["--cli", "--strict", "--format", "json", "-e", `ACTION_SERVICE_DATA_DIR=${dataDir}`, "-e", "ACTION_SERVICE_PORT=0", "--method", "tools/list", process.execPath, CLI, "mcp"],
    // Node 22 runs the Inspector (its shebang finds `node` on PATH); the service runs on this Node.
    { env: { ...cleanEnv(), PATH: `${bin}:${process.env.PATH}`, MCP_CATALOG_PATH: join(dataDir, "inspector-catalog.json") }, timeout: INSPECTOR_TIMEOUT_MS },
  );
  let envelope;
  try {
    envelope = JSON.parse(inspector.stdout);
  } catch {
    envelope = undefined;
  }
  const findings = (envelope?.schemaFindings ?? []).flatMap(({ toolName, findings }) => findings.map((finding) => ({ toolName, ...finding })));
  return {
    status: inspector.status,
    parsed: envelope !== undefined,
    tools: envelope?.result?.tools?.length,
    errors: findings.filter((finding) => finding.severity === "error").length,
    warnings: findings.filter((finding) => finding.severity !== "error").length,
    findings: findings.map((finding) => `${finding.severity} in tool ${finding.toolName}: ${finding.issue}`),
    stderr: inspector.stderr.trim(),
  };
}

const started = Date.now();
if (!existsSync(CLI)) throw new Error("dist/cli.js is missing: run `npm run build` first.");
const bin = await install();
const service = await startServe();
const proxy = await startProxy(`${service.url}/mcp`, service.key);
const conformance = await runConformance(bin, proxy.url);
proxy.close();
const inspector = await runInspector(bin);

const expected = expectedFailures();
const { results } = conformance;
const unexpected = results.filter((result) => !result.passed && !expected.has(result.name));
console.log(`\nMCP conformance (server scenarios, ${SUITE} suite):`);
for (const result of results.sort((a, b) => a.name.localeCompare(b.name))) {
  const mark = result.passed ? (expected.has(result.name) ? "pass (STALE)" : "pass") : expected.has(result.name) ? "FAIL (expected)" : "FAIL";
  const why = result.passed ? (result.note ?? "") : expected.has(result.name) ? `${expected.get(result.name)} [${result.reason}]` : result.reason;
  console.log(`  ${mark.padEnd(16)} ${result.name}${why ? `\n  ${" ".repeat(16)} ${why}` : ""}`);
}
if (results.length === 0) console.log(conformance.output);
for (const name of expected.keys()) if (!results.some((result) => result.name === name)) console.log(`  (listed in conformance-expected.yaml but not run: ${name})`);
console.log(`  ${results.filter((result) => result.passed).length} of ${results.length} scenarios pass; ${unexpected.length} unexpected failures; ${conformance.stale.length} stale baseline entries; suite exit ${conformance.status}.`);
console.log(`\nInspector --strict tools/list: exit ${inspector.status}, ${inspector.tools ?? "?"} tools, ${inspector.errors} errors, ${inspector.warnings} warnings`);
for (const finding of inspector.findings) console.log(`  ${finding}`);
if (!inspector.parsed || inspector.status !== 0) console.log(`  (output not understood or non-zero exit) ${inspector.stderr}`);
console.log(`\n(${((Date.now() - started) / 1000).toFixed(0)} s)`);
const ok = conformance.status === 0 && unexpected.length === 0 && results.length > 0 && inspector.status === 0 && inspector.parsed && inspector.errors === 0 && inspector.warnings === 0;
process.exit(ok ? 0 : 1);
