#!/usr/bin/env node
// One-command setup on a fresh machine: dependencies, a Chromium, a build.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const log = (message) => console.log(`[setup] ${message}`);
const run = (command, args, options = {}) => {
  log(`$ ${command} ${args.join(" ")}`);
  const result = spawnSync(command, args, { stdio: "inherit", ...options });
  if (result.status !== 0) {
    console.error(`[setup] ${command} failed with exit code ${result.status}`);
    process.exit(result.status ?? 1);
  }
};

const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 20 || (major === 20 && minor < 19)) {
  console.error(`[setup] Node ${process.versions.node} is too old: action-service needs Node 20.19 or newer.`);
  process.exit(1);
}

if (!existsSync("node_modules/.package-lock.json") || process.env.SETUP_FORCE_INSTALL) {
  run("npm", [existsSync("package-lock.json") ? "ci" : "install", "--no-audit", "--no-fund"]);
}

// The headless shell first: the service's own order (src/browser/executable.ts says why).
const CANDIDATES = ["/usr/bin/chromium-headless-shell", "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome", "/usr/bin/google-chrome-stable"];
const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
const APT_ENV = { env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } };
const aptSteps = (packages) => [
  ["update", "-qq"],
  ["install", "-y", "-qq", "--no-install-recommends", ...packages],
];
/** Installs `packages`, or stops setup. */
const apt = (packages) => aptSteps(packages).forEach((args) => run("apt-get", args, APT_ENV));
/** Installs `packages` if it can: whether it did. */
const tryApt = (packages) =>
  aptSteps(packages).every((args) => {
    log(`$ apt-get ${args.join(" ")}`);
    return spawnSync("apt-get", args, { stdio: "inherit", ...APT_ENV }).status === 0;
  });

function findChromium() {
  const explicit = process.env.BROWSER_EXECUTABLE_PATH;
  if (explicit) return existsSync(explicit) ? explicit : undefined;
  try {
    const bundled = execFileSync(process.execPath, ["-e", "process.stdout.write(require('playwright').chromium.executablePath())"], { encoding: "utf8" });
    if (bundled && existsSync(bundled)) return bundled;
  } catch {
    // No Playwright download: fall through to a system browser.
  }
  return CANDIDATES.find((path) => existsSync(path));
}

let chromium = findChromium();
const canApt = isRoot && existsSync("/usr/bin/apt-get");
if (!chromium && !process.env.BROWSER_WS_ENDPOINT) {
  if (canApt) {
    // The shell is what the service takes; the full browser beside it is for a person (and costs little more: both share chromium-common).
    log("No Chromium found: installing Debian's chromium-headless-shell and chromium packages.");
    apt(["chromium-headless-shell", "chromium", "fonts-liberation"]);
    chromium = findChromium();
  }
  if (!chromium) {
    console.error(
      [
        "[setup] No Chromium found. Install one, then run `npm run setup` again:",
        "  Debian/Ubuntu:  sudo apt-get install -y chromium-headless-shell   (or chromium)",
        "  any system:     npx playwright install chromium",
        "  or point BROWSER_EXECUTABLE_PATH at a Chrome/Chromium binary, or BROWSER_WS_ENDPOINT at a Playwright server.",
      ].join("\n"),
    );
    process.exit(1);
  }
} else if (chromium === "/usr/bin/chromium" && canApt && !process.env.BROWSER_EXECUTABLE_PATH) {
  // Debian's full browser without its headless shell: the shell does the same work for a third of the CPU.
  // Only faster, never needed: a machine that cannot reach its package archive goes on with chromium.
  log("Debian's chromium found without its headless shell: installing chromium-headless-shell.");
  if (tryApt(["chromium-headless-shell"])) chromium = findChromium();
  else log("Could not install chromium-headless-shell: going on with chromium.");
}
log(chromium ? `Chromium: ${chromium}` : `Remote browser: ${process.env.BROWSER_WS_ENDPOINT}`);

run("npm", ["run", "build"]);
log("Done. Start with `npm start`; run the tests with `npm test`.");
