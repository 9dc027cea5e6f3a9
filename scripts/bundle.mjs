// The service's JavaScript in dist/, as a few files instead of some eight hundred modules: its own
// code and the pure-ESM packages it imports on every start (kysely, zod, hono, the MCP SDK). Node
// 20 keeps no compile cache, so each process paid to find, read and link every module anew:
// measured here, importing the server took 1.1 s of CPU from tsc's one-file-per-module dist/ and
// 0.4 s from this bundle. A CLI call, every stdio `mcp` a desktop client starts and every `serve`
// start that much sooner.
//
// Entries whose paths others rely on:
// - cli.js: the `action-service` command (package.json's bin);
// - driver-api.js: `action-service/driver`, which loaded drivers import. It shares its chunks with
//   cli.js, so a driver's ActionFailure is the service's own class;
// - webhook-worker.js: the delivery thread's entry, found beside the chunk that starts it.
// Chunks sit beside them in dist/ (a chunk finds the worker's entry as "./webhook-worker.js"). tsc
// writes dist/'s type declarations after this (tsconfig.build.json).
import { build } from "esbuild";
import { rmSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const dist = join(root, "dist");

/**
 * Packages bundled in: pure ESM or plain CommonJS, no files found beside their modules, loaded on
 * every start. The rest stay imported from node_modules: native code (better-sqlite3), packages
 * that find files or start workers by path (playwright, pino's transports, mailauth's data,
 * ganache), and those loaded only by some commands.
 */
const BUNDLED = new Set(["kysely", "zod", "hono", "@hono/node-server", "@modelcontextprotocol/server", "@modelcontextprotocol/core", "@modelcontextprotocol/node"]);

function packageName(specifier) {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

const onlySomePackages = {
  name: "only-some-packages",
  setup(bundle) {
    bundle.onResolve({ filter: /^[^./]/ }, ({ path }) => (path.startsWith("node:") || !BUNDLED.has(packageName(path)) ? { path, external: true } : undefined));
  },
};

// What an earlier build left (old chunks, declarations of modules since removed) goes first.
rmSync(dist, { recursive: true, force: true });

await build({
  absWorkingDir: root,
  entryPoints: { cli: "src/cli.ts", "driver-api": "src/driver-api.ts", "webhook-worker": "src/events/webhook-worker.ts" },
  outdir: dist,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  sourcemap: "linked",
  // Stack traces (--enable-source-maps) and coverage map back to src/ by path.
  sourcesContent: false,
  plugins: [onlySomePackages],
  logLevel: "warning",
});
