import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { aptInstall } from "../commands.mjs";

/**
 * Debian's `faketime` (libfaketime): the suites that run a coordinator with its clock off
 * (test/postgres/skew.test.ts under `test:postgres`, test/faults under `test:faults`) preload it.
 */
const log = (message) => console.log(`[faketime] ${message}`);

/** libfaketime's preload library, where Debian's `faketime` package puts it (/usr/lib/<multiarch>/faketime/); undefined when missing. */
export function fakeTimeLibrary() {
  // x86_64-linux-gnu, aarch64-linux-gnu, …
  const candidates = ["/usr/lib/faketime", ...readdirSync("/usr/lib").map((name) => join("/usr/lib", name, "faketime"))];
  return candidates.map((dir) => join(dir, "libfaketime.so.1")).find((file) => existsSync(file));
}

const fakeTimeInstalled = () => fakeTimeLibrary() !== undefined;

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
