import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { Sealer, openStore, type PostgresAdapter, type Store, type StoreLocation } from "../../src/store/index.js";

/** Set by `npm run test:postgres` (scripts/postgres/test.mjs): the URL of the migrated template database. */
const TEMPLATE_URL_ENV = "ACTION_SERVICE_TEST_DATABASE_URL";
/** PostgreSQL's "object in use": the template had another connection while it was to be copied. */
const IN_USE = "55006";
const MAX_ATTEMPTS = 20;

/**
 * Where a test's store lives. `npm test`: a SQLite file in the test's own dir. `npm run
 * test:postgres` (which sets `ACTION_SERVICE_TEST_DATABASE_URL` to a migrated template database
 * on a throw-away cluster): a fresh PostgreSQL database made from that template, one per store.
 * Nothing is dropped: the whole cluster is thrown away after the run.
 */
export async function testStoreLocation(dir: string): Promise<StoreLocation> {
  const template = process.env[TEMPLATE_URL_ENV];
  if (!template) return { sqliteFile: join(dir, "action-service.db") };
  return { databaseUrl: await freshDatabase(template) };
}

/** A store of its own (a SQLite file in a new temporary dir, or a fresh PostgreSQL database) and how to close it and remove the dir. */
export async function temporaryStore(prefix: string): Promise<{ store: Store; remove(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const store = await openStore(await testStoreLocation(dir), new Sealer(randomBytes(32)));
  return {
    store,
    async remove() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The migrated template database of `npm run test:postgres` (an error under `npm test`). */
export function templateDatabaseUrl(): string {
  const template = process.env[TEMPLATE_URL_ENV];
  if (!template) throw new Error(`${TEMPLATE_URL_ENV} is not set: run this file with npm run test:postgres`);
  return template;
}

/** Whether this run's stores are on PostgreSQL. */
export function onPostgres(): boolean {
  return Boolean(process.env[TEMPLATE_URL_ENV]);
}

/**
 * A database made from the template (already migrated), `t_<random hex>` on the same server;
 * PostgreSQL copies it in a few milliseconds. Asked of the server's `postgres` database: a
 * template must have no connection while it is copied.
 */
export async function freshDatabase(templateUrl: string): Promise<string> {
  const templateName = decodeURIComponent(new URL(templateUrl).pathname.slice(1));
  const name = `t_${randomBytes(8).toString("hex")}`;
  const admin = new URL(templateUrl);
  admin.pathname = "/postgres";
  const client = new pg.Client({ connectionString: admin.toString() });
  client.on("error", () => undefined);
  await client.connect();
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        await client.query(`CREATE DATABASE "${name}" TEMPLATE "${templateName.replaceAll('"', '""')}"`);
        break;
      } catch (error) {
        // Someone was connected to the template at that moment (a copy in progress, a closing pool).
        if ((error as { code?: string }).code !== IN_USE || attempt >= MAX_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
      }
    }
  } finally {
    await client.end().catch(() => undefined);
  }
  const url = new URL(templateUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * What a process that died leaves: a consistent copy of its store taken while its work is in
 * flight, for the next process to open. SQLite: an online backup into `dir`. PostgreSQL: the dead
 * process's connections end (as they do when it dies) and its database is copied as a template.
 */
export async function copyAsLeftByACrash(store: Store, dir: string): Promise<StoreLocation> {
  if (store.sqlite) {
    await store.sqlite.backup(join(dir, "action-service.db"));
    return { sqliteFile: join(dir, "action-service.db") };
  }
  const { url } = store.adapter as PostgresAdapter;
  await store.close();
  return { databaseUrl: await freshDatabase(url) };
}

/** On PostgreSQL, what each session of the store's database is doing (for a report of a hang); "" on SQLite. */
export async function describeSessions(store: Store): Promise<string> {
  if (store.sqlite) return "";
  const { url } = store.adapter as PostgresAdapter;
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query(
      "SELECT pid, state, wait_event_type, wait_event, now() - xact_start AS in_transaction, left(query, 200) AS query FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
    );
    return rows.map((row) => `\n  ${JSON.stringify(row)}`).join("");
  } catch (error) {
    return `\n  (sessions not read: ${String(error)})`;
  } finally {
    await client.end().catch(() => undefined);
  }
}
