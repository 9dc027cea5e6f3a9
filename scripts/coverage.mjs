#!/usr/bin/env node
// `npm run test:coverage [-- <vitest args>]`: line coverage of src/ by `npm test`, counted where the
// code runs. vitest's v8 coverage sees only its own test processes; much of the service runs in
// processes the tests start (`serve`, the stdio `mcp`, the CLI, `driver check`, the webhook thread),
// from dist/. Those write Node's own coverage (NODE_V8_COVERAGE), which c8 maps back to src/ through
// the build's source maps. A src/ line counts as covered when either saw it run; which lines count
// at all is vitest's reckoning (its statements), so the figure is comparable with vitest's alone.
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import libCoverage from "istanbul-lib-coverage";
import { Report } from "c8";

const root = resolve(import.meta.dirname, "..");
const out = join(root, "test-artifacts", "coverage");
const processes = join(out, "processes");
const log = (message) => console.log(`[test:coverage] ${message}`);

rmSync(out, { recursive: true, force: true });
mkdirSync(processes, { recursive: true });

// dist/ is what the spawned processes run: it must be this tree's.
await run("npm", ["run", "build"]);
const vitestArgs = ["vitest", "run", "--coverage", "--coverage.reporter=json", "--coverage.reporter=json-summary", "--coverage.reporter=text-summary", ...process.argv.slice(2)];
const exitCode = await run("npx", vitestArgs, { NODE_V8_COVERAGE: processes });

log("mapping the started processes' coverage (dist/) back to src/");
const started = await Report({
  tempDirectory: processes,
  reportsDirectory: join(out, "started"),
  reporter: [],
  include: ["dist/**/*.js"],
  exclude: [],
  excludeAfterRemap: false,
  resolve: root,
  src: [root],
  // One process's files at a time: the test workers' own files are large.
  mergeAsync: true,
}).getCoverageMapFromAllCoverageFiles();

const inProcess = libCoverage.createCoverageMap(JSON.parse(readFileSync(join(out, "coverage-final.json"), "utf8")));
const startedFiles = new Set(started.files());
const lines = { total: 0, inProcess: 0, merged: 0 };
const files = {};
for (const file of inProcess.files()) {
  const mine = inProcess.fileCoverageFor(file).getLineCoverage();
  const theirs = startedFiles.has(file) ? started.fileCoverageFor(file).getLineCoverage() : {};
  const total = Object.keys(mine).length;
  const here = Object.values(mine).filter((count) => count > 0).length;
  const either = Object.keys(mine).filter((line) => mine[line] > 0 || (theirs[line] ?? 0) > 0).length;
  lines.total += total;
  lines.inProcess += here;
  lines.merged += either;
  files[relative(root, file)] = { lines: total, inProcess: here, merged: either };
}
// Nothing to compare if the in-process map is empty.
if (lines.total === 0) throw new Error("vitest wrote no coverage of src/ (test-artifacts/coverage/coverage-final.json is empty)");
const percent = (count) => Math.round((10_000 * count) / lines.total) / 100;
const summary = {
  lines: lines.total,
  inProcess: { covered: lines.inProcess, percent: percent(lines.inProcess) },
  withStartedProcesses: { covered: lines.merged, percent: percent(lines.merged) },
  files,
};
writeFileSync(join(out, "lines-summary.json"), `${JSON.stringify(summary, null, 2)}\n`);
log(`src/ lines: ${percent(lines.inProcess)} % (${lines.inProcess} of ${lines.total}) in the test processes; ${percent(lines.merged)} % (${lines.merged}) with the processes they started`);
log(`by file: ${relative(root, join(out, "lines-summary.json"))}`);
process.exitCode = exitCode;

function run(command, args, env = {}) {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd: root, stdio: "inherit", env: { ...process.env, ...env } });
    child.once("error", fail);
    child.once("exit", (code, signal) => done(code ?? (signal ? 1 : 0)));
  });
}
