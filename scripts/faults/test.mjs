#!/usr/bin/env node
/**
 * `npm run test:faults [-- vitest args]`: the fault-injection suite (test/faults,
 * vitest.faults.config.mts) — three real coordinators on a real PostgreSQL, each through a TCP
 * proxy the test controls, under the faults of DESIGN §11 ("Faults a fleet meets").
 *
 * Installs what is missing — Debian's PostgreSQL server (scripts/postgres/cluster.mjs) and
 * Debian's `faketime` (libfaketime, for the coordinators whose clocks are off) by apt-get when
 * root — builds dist/ when it is missing (the coordinators are `node dist/cli.js serve`), starts a
 * throw-away cluster, migrates a template database with the product's own `PostgresAdapter`, and
 * runs vitest with `ACTION_SERVICE_TEST_DATABASE_URL` naming the template: each fleet gets a fresh
 * copy of it (the scenario that restarts PostgreSQL starts a cluster of its own, as the others'
 * fleets share this one). The cluster is deleted at the end, whatever the outcome, and on
 * SIGINT/SIGTERM.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { runVitestOnCluster } from "../postgres/vitest-on-cluster.mjs";

/** libfaketime's preload library, where Debian's `faketime` package puts it (/usr/lib/<multiarch>/faketime/). */
function fakeTimeInstalled() {
  const candidates = ["/usr/lib/faketime", ...readdirSync("/usr/lib").map((name) => join("/usr/lib", name, "faketime"))];
  return candidates.some((dir) => existsSync(join(dir, "libfaketime.so.1")));
}

function installFakeTime({ run, log }) {
  if (fakeTimeInstalled()) return;
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (!isRoot || !existsSync("/usr/bin/apt-get")) {
    throw new Error("libfaketime is not installed. Install Debian's package, then run again:\n  sudo apt-get install -y faketime");
  }
  log("libfaketime is missing: installing Debian's faketime package");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  run("apt-get", ["update", "-qq"], { env });
  run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", "faketime"], { env });
  if (!fakeTimeInstalled()) throw new Error("apt-get installed faketime but no libfaketime.so.1 is under /usr/lib/*/faketime/");
}

await runVitestOnCluster({ name: "faults", config: "vitest.faults.config.mts", prepare: installFakeTime });
