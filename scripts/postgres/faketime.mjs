import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

/**
 * Debian's `faketime` (libfaketime): the suites that run a coordinator with its clock off
 * (test/postgres/skew.test.ts under `test:postgres`, test/faults under `test:faults`) preload it.
 */
const log = (message) => console.log(`[faketime] ${message}`);

/** libfaketime's preload library, where Debian's `faketime` package puts it (/usr/lib/<multiarch>/faketime/). */
function fakeTimeInstalled() {
  const candidates = ["/usr/lib/faketime", ...readdirSync("/usr/lib").map((name) => join("/usr/lib", name, "faketime"))];
  return candidates.some((dir) => existsSync(join(dir, "libfaketime.so.1")));
}

/** Installs Debian's faketime when libfaketime is missing. */
export function installFakeTime() {
  if (fakeTimeInstalled()) return;
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (!isRoot || !existsSync("/usr/bin/apt-get")) {
    throw new Error("libfaketime is not installed. Install Debian's package, then run again:\n  sudo apt-get install -y faketime");
  }
  log("not installed: installing Debian's faketime package");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  for (const args of [["update", "-qq"], ["install", "-y", "-qq", "--no-install-recommends", "faketime"]]) {
    const result = spawnSync("apt-get", args, { stdio: "inherit", env });
    if (result.status !== 0) throw new Error(`apt-get ${args.join(" ")} failed (exit ${result.status ?? result.signal})`);
  }
  if (!fakeTimeInstalled()) throw new Error("apt-get installed faketime but no libfaketime.so.1 is under /usr/lib/*/faketime/");
}
