import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { aptInstall } from "../commands.mjs";

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
  aptInstall(["faketime"], {
    missing: "libfaketime is not installed.",
    installed: fakeTimeInstalled,
    incomplete: "apt-get installed faketime but no libfaketime.so.1 is under /usr/lib/*/faketime/",
    log,
  });
}
