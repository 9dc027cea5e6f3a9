import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Sealer, openStore, type StoreLocation } from "../../src/store/index.js";
import { testStoreLocation } from "../helpers/database.js";
import { CLI, START_DEADLINE_MS } from "../helpers/processes.js";
import { eventually } from "../helpers/wait.js";

// A fleet upgraded one coordinator at a time (issue 40): once a newer release has migrated the
// database, an older coordinator must not start against it (migration 005 changed a CHECK that old
// code would break). Runs on SQLite (`npm test`) and PostgreSQL (`npm run test:postgres`).
const FUTURE = { version: 999, name: "999_from_a_newer_release.sql" };

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A database migrated as this code knows it, then further by a "newer release". */
async function migratedByANewerRelease(): Promise<{ location: StoreLocation; sealer: Sealer }> {
  dir = mkdtempSync(join(tmpdir(), "action-service-schema-"));
  const location = await testStoreLocation(dir);
  const sealer = new Sealer(randomBytes(32));
  const store = await openStore(location, sealer);
  await store.adapter.db.insertInto("schema_migrations").values({ ...FUTURE, applied_at: new Date().toISOString() }).execute();
  await store.close();
  return { location, sealer };
}

describe("a database whose schema is newer than this release", () => {
  it("is refused when the store opens, naming the version applied and saying to run a newer action-service; nothing is applied", async () => {
    const { location, sealer } = await migratedByANewerRelease();
    const opening = openStore(location, sealer);
    await expect(opening).rejects.toThrow(/schema is at version 999 \(999_from_a_newer_release\.sql\), newer than this action-service knows .*Run an action-service release that includes migration 999_from_a_newer_release\.sql/);
  });

  it("stops `serve` at start-up with that message and a non-zero exit", { timeout: 60_000 }, async () => {
    const { location } = await migratedByANewerRelease();
    const env: Record<string, string> = { ACTION_SERVICE_DATA_DIR: dir, ACTION_SERVICE_PORT: "0" };
    if ("databaseUrl" in location) Object.assign(env, { ACTION_SERVICE_DATABASE_URL: location.databaseUrl, ACTION_SERVICE_MASTER_KEY: randomBytes(32).toString("hex") });
    const child = spawn(process.execPath, [CLI, "serve"], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    // It exits, or it comes up (and is stopped: a failure).
    const started = eventually(() => output.includes("listening on"), { what: "serve to exit or listen", timeoutMs: START_DEADLINE_MS }).then(() => "listening" as const);
    const first = await Promise.race([exited, started.catch(() => "listening" as const)]);
    if (first === "listening") {
      child.kill("SIGKILL");
      throw new Error(`serve started against a newer schema: ${output}`);
    }
    const exit = first;
    if (exit === null) throw new Error(`serve did not exit by itself: ${output}`);
    expect(exit, output).not.toBe(0);
    expect(output).toMatch(/schema is at version 999 .*Run an action-service release that includes migration 999_from_a_newer_release\.sql/);
    expect(output).not.toContain("listening on");
  });
});
