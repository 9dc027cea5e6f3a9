/**
 * (s) broken down: which statements a warm post costs, by statement, so a count can be read and
 * cut (`npx tsx bench/statement-breakdown.ts`; build first). PostgreSQL by its own count
 * (`pg_stat_statements`, as (s)) for `BREAKDOWN_COORDINATORS` (default 1,2,3) coordinators, posts
 * created through each in turn; SQLite by the SQL text its driver prepares, in a service in this
 * process (as (s)'s SQLite figure is counted there). Each line: calls per post, and the statement.
 * (s)'s PostgreSQL posts carry an `Idempotency-Key` (bench/fleet.ts `runAction`) and its SQLite
 * ones none; `BREAKDOWN_IDEMPOTENCY=on` gives the SQLite posts one too, to compare like with like.
 */
import Database from "better-sqlite3";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSandboxProcess, type CliProcess } from "../test/chaos/kill-support.js";
import { startLiveService } from "../test/helpers/live-service.js";
import { warmAccount } from "./fleet-statements.js";
import { FLEET_ENV, runAction, stopProcess, unique, withFleet } from "./fleet.js";
import { startBenchPostgres, type BenchPostgres } from "./postgres.js";

const POSTS = Number(process.env.BENCH_STATEMENT_POSTS ?? 20);
const COUNTS = (process.env.BREAKDOWN_COORDINATORS ?? "1,2,3").split(",").map(Number);
const IDEMPOTENT = process.env.BREAKDOWN_IDEMPOTENCY === "on";

function print(label: string, before: Map<string, number>, after: Map<string, number>, posts: number): void {
  const rows = [...after].map(([query, calls]) => [query, (calls - (before.get(query) ?? 0)) / posts] as const).filter(([, perPost]) => perPost > 0);
  rows.sort((a, b) => b[1] - a[1]);
  const total = rows.reduce((sum, [, perPost]) => sum + perPost, 0);
  console.log(`\n=== ${label}: ${total.toFixed(1)} statements per post`);
  for (const [query, perPost] of rows) console.log(`${perPost.toFixed(2).padStart(6)}  ${query.replace(/\s+/g, " ").slice(0, 260)}`);
}

async function onPostgres(postgres: BenchPostgres, sandboxUrl: string, count: number): Promise<void> {
  const database = await postgres.database();
  await withFleet({ sandboxUrl, count, database, label: "sb" }, async (fleet) => {
    const account = await warmAccount(fleet);
    const before = await postgres.statementsByText(database);
    for (let i = 0; i < POSTS; i++) await runAction(fleet.next(), fleet.key, account, "post", { text: unique("breakdown") });
    print(`PostgreSQL, ${count} coordinators`, before, await postgres.statementsByText(database), POSTS);
  });
}

async function onSqlite(): Promise<void> {
  // The store keeps its prepared statements (sqlite-file.ts): count their runs, by their text.
  const counts = new Map<string, number>();
  const probe = new Database(":memory:");
  const statement = Object.getPrototypeOf(probe.prepare("select 1")) as Record<"all" | "run" | "get", (...args: unknown[]) => unknown>;
  probe.close();
  const originals = { all: statement.all, run: statement.run, get: statement.get };
  for (const method of ["all", "run", "get"] as const) {
    statement[method] = function (this: Database.Statement, ...args: unknown[]) {
      if (!/^PRAGMA/i.test(this.source)) counts.set(this.source, (counts.get(this.source) ?? 0) + 1);
      return originals[method].apply(this, args);
    };
  }
  const live = await startLiveService({ env: { ...FLEET_ENV } });
  try {
    const account = await live.account(await live.user("none"));
    if ((await live.run(account, "connect")).status !== "succeeded") throw new Error("connect failed");
    for (let i = 0; i < 3; i++) await live.run(account, "post", { text: unique("warm-up") });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const before = new Map(counts);
    for (let i = 0; i < POSTS; i++) {
      const headers: Record<string, string> = IDEMPOTENT ? { "idempotency-key": randomUUID() } : {};
      const response = await live.api("POST", "/v1/actions?wait=30", { account_id: account, type: "post", params: { text: unique("breakdown") } }, { headers });
      if (response.json.status !== "succeeded") throw new Error(`post ${response.json.status}`);
    }
    print(`SQLite, in-process${IDEMPOTENT ? ", with an Idempotency-Key" : ""}`, before, counts, POSTS);
  } finally {
    await live.close();
    Object.assign(statement, originals);
  }
}

const dir = mkdtempSync(join(tmpdir(), "action-service-bench-breakdown-"));
let postgres: BenchPostgres | undefined;
let sandbox: CliProcess | undefined;
try {
  if (process.env.BREAKDOWN_SQLITE !== "off") await onSqlite();
  if (COUNTS.some((count) => count > 0)) {
    postgres = await startBenchPostgres({ counted: true });
    sandbox = await startSandboxProcess(join(dir, "sandbox.log"));
    for (const count of COUNTS.filter((count) => count > 0)) await onPostgres(postgres, sandbox.url, count);
  }
} finally {
  if (sandbox) await stopProcess(sandbox);
  await postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
}
