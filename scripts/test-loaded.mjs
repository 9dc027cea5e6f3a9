#!/usr/bin/env node
// `npm run test:loaded [-- <vitest args>]`: the test suite on a machine whose every core is busy.
// A test that passes only on an idle machine mistakes slow for broken (DESIGN §3); this shows it.
// One hog a core, each its own process at normal priority, spinning until this script stops it.
import { spawn } from "node:child_process";
import { availableParallelism, constants } from "node:os";

const log = (message) => console.log(`[test:loaded] ${message}`);

// A hog checks now and then that its parent is still this script, so a kill -9 here leaves no hog spinning.
const HOG = "const parent = process.ppid; for(;;){ for (let i = 0; i < 1e8; i++); if (process.ppid !== parent) process.exit(); }";

const started = Date.now();
const count = availableParallelism();
log(`${count} CPU hog${count === 1 ? "" : "s"} (one a core), then npm test ${process.argv.slice(2).join(" ")}`.trimEnd());
const hogs = Array.from({ length: count }, () => spawn(process.execPath, ["-e", HOG], { stdio: "ignore" }));
const hogsStopped = Promise.all(hogs.map((hog) => new Promise((resolve) => (hog.exitCode !== null || hog.signalCode !== null ? resolve() : hog.once("exit", resolve)))));

const extra = process.argv.slice(2);
// Its own process group, so a signal reaches vitest and its workers and not only npm.
const tests = spawn("npm", ["test", ...(extra.length ? ["--", ...extra] : [])], { stdio: "inherit", detached: true });

function stopHogs() {
  for (const hog of hogs) if (hog.exitCode === null && hog.signalCode === null) hog.kill("SIGKILL");
}

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    stopHogs();
    try {
      process.kill(-tests.pid, signal);
    } catch {
      // The tests have already ended.
    }
  });
}
// Whatever ends this script (an error included) ends the hogs; kill() is synchronous.
process.on("exit", stopHogs);

const exitCode = await new Promise((resolve) => {
  tests.once("error", (error) => {
    console.error(`[test:loaded] could not run npm test: ${error.message}`);
    resolve(1);
  });
  tests.once("exit", (code, signal) => resolve(code ?? 128 + (constants.signals[signal] ?? 0)));
});
stopHogs();
await hogsStopped;
log(`wall time ${((Date.now() - started) / 1000).toFixed(1)} s, npm test exit code ${exitCode}`);
process.exit(exitCode);
