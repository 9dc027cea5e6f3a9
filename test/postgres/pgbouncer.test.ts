import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startPgbouncer, type Pgbouncer } from "../../scripts/postgres/pgbouncer.mjs";
import { PostgresAdapter, SESSION_TIMEOUTS } from "../../src/store/adapters/postgres.js";
import { isConnectionLost } from "../../src/store/adapters/busy.js";
import type { Change } from "../../src/store/change-feed.js";
import { createSandboxUser } from "../chaos/kill-support.js";
import { freshDatabase, templateDatabaseUrl } from "../helpers/database.js";
import { restClient } from "../helpers/processes.js";
import { eventually } from "../helpers/wait.js";
import { coordinatorsOnPostgres } from "./support.js";

// PgBouncer in transaction mode between coordinators and PostgreSQL (DESIGN §11): a real PgBouncer
// (Debian's, scripts/postgres/pgbouncer.mjs) before the test cluster, with none of its own limits
// set. Stores reach the database through it (`ACTION_SERVICE_DATABASE_URL`) and listen, renew
// leases and migrate on a direct connection (`ACTION_SERVICE_DATABASE_LISTEN_URL`). Runs under
// `npm run test:postgres` only.
const machines = coordinatorsOnPostgres("pgbouncer");
let bouncer: Pgbouncer;
beforeAll(async () => {
  bouncer = await startPgbouncer(templateDatabaseUrl());
});
afterAll(async () => {
  await bouncer?.stop();
});

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const thing of opened.splice(0)) await thing.close();
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A store on a fresh database through PgBouncer, and that database's direct URL. */
async function throughPgbouncer(): Promise<{ adapter: PostgresAdapter; url: string }> {
  const url = await freshDatabase(templateDatabaseUrl());
  const adapter = await PostgresAdapter.open(bouncer.url(url), { listenUrl: url });
  opened.push(adapter);
  return { adapter, url };
}

describe("a store through PgBouncer in transaction mode", () => {
  it("keeps its limits in every transaction: one left idle is ended by the server (and runs again), a lock wait fails after lock_timeout", { timeout: 90_000 }, async () => {
    const { adapter, url } = await throughPgbouncer();
    expect(adapter.pooled).toBe(true);

    // Left idle inside its transaction longer than idle_in_transaction_session_timeout: the server
    // ends that session; the transaction had not committed, so it runs again, on another.
    const failures: unknown[] = [];
    let attempts = 0;
    const outcome = await adapter.transaction(async (db) => {
      attempts += 1;
      await db.selectFrom("workspaces").select("id").execute();
      if (attempts === 1) {
        await sleep(SESSION_TIMEOUTS.idle_in_transaction_session_timeout + 3_000);
        try {
          await db.selectFrom("workspaces").select("id").execute();
        } catch (error) {
          failures.push(error);
          throw error;
        }
      }
      return "ran";
    });
    expect(outcome).toBe("ran");
    expect(failures).toHaveLength(1);
    expect(isConnectionLost(failures[0]), String(failures[0])).toBe(true);
    expect(attempts).toBe(2);

    // A lock another session holds: the statement gives up after lock_timeout (then the
    // transaction would run again; here the work keeps the error to look at it).
    const holder = new pg.Client({ connectionString: url });
    holder.on("error", () => undefined);
    await holder.connect();
    opened.push({ close: () => holder.end() });
    await holder.query("BEGIN");
    await holder.query("LOCK TABLE workspaces IN ACCESS EXCLUSIVE MODE");
    // Let go in any case, so a store without a lock_timeout ends the test instead of waiting for ever.
    const release = setTimeout(() => void holder.query("ROLLBACK").catch(() => undefined), 25_000);
    try {
      const started = Date.now();
      let error: (Error & { code?: string }) | undefined;
      await adapter
        .transaction(async (db) => {
          try {
            await db.selectFrom("workspaces").select("id").execute();
          } catch (caught) {
            error = caught as Error & { code?: string };
          }
        })
        // Kept here, not thrown (it would be run again): its COMMIT then finds the transaction aborted.
        .catch(() => undefined);
      const waited = Date.now() - started;
      expect(error?.code, String(error)).toBe("55P03");
      expect(waited).toBeGreaterThanOrEqual(SESSION_TIMEOUTS.lock_timeout - 500);
      expect(waited).toBeLessThan(20_000);
    } finally {
      clearTimeout(release);
      await holder.query("ROLLBACK").catch(() => undefined);
    }
  });

  it("without ACTION_SERVICE_DATABASE_LISTEN_URL, stops at once saying what to set (PgBouncer refuses the session limits asked for when a connection opens)", { timeout: 30_000 }, async () => {
    const url = await freshDatabase(templateDatabaseUrl());
    const started = Date.now();
    await expect(PostgresAdapter.open(bouncer.url(url))).rejects.toThrow(/leads to a connection pooler .* Set ACTION_SERVICE_DATABASE_LISTEN_URL to a direct connection/);
    // Not taken for PostgreSQL restarting (tried again for 30 s).
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("names the writer of each change: PgBouncer gives every client its own application_name, whichever server session it runs on", { timeout: 60_000 }, async () => {
    const { adapter: first, url } = await throughPgbouncer();
    const second = await PostgresAdapter.open(bouncer.url(url), { listenUrl: url });
    opened.push(second);
    const follower = await PostgresAdapter.open(url);
    opened.push(follower);
    const heard: Change[] = [];
    follower.changes.on((change) => change && heard.push(change));
    const now = new Date().toISOString();
    for (const [writer, workspace] of [[first, "ws_first"], [second, "ws_second"]] as const) {
      await writer.db.insertInto("workspaces").values({ id: workspace, name: workspace, created_at: now }).execute();
    }
    const event = (workspace: string) => ({ id: `evt_${randomBytes(4).toString("hex")}`, workspace_id: workspace, type: "account.updated" as const, subject_id: "acc_x", account_id: "acc_x", data: "{}", created_at: now });
    await eventually(
      async () => {
        // Interleaved, so the two clients' statements share PgBouncer's server sessions.
        for (let i = 0; i < 5; i++) {
          await first.db.insertInto("events").values(event("ws_first")).execute();
          await second.db.insertInto("events").values(event("ws_second")).execute();
        }
        return heard.filter((change) => change.subject === "event:ws_first").length >= 5 && heard.filter((change) => change.subject === "event:ws_second").length >= 5;
      },
      { what: "the follower to hear both writers' commits" },
    );
    for (const change of heard.filter((each) => each.subject.startsWith("event:"))) {
      expect(change).toEqual({ subject: change.subject, origin: change.subject === "event:ws_first" ? first.origin : second.origin });
    }
  });
});

describe("two coordinators through PgBouncer", () => {
  it("run a post that asks for a code on one and is answered on the other: it signs in, posts once, succeeds", { timeout: 180_000 }, async () => {
    const { start } = await machines.database((url) => ({ ACTION_SERVICE_DATABASE_URL: bouncer.url(url), ACTION_SERVICE_DATABASE_LISTEN_URL: url }));
    const one = await start(1);
    const two = await start(2);
    const onOne = restClient(() => one.url, one.firstKey!);
    const onTwo = restClient(() => two.url, one.firstKey!);
    const handle = `bouncer${Date.now().toString(36)}`;
    await createSandboxUser(machines.sandbox.url, handle, "email");
    const account = (await onOne("POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password" })).json.id as string;
    const text = `through pgbouncer ${handle}`;
    const created = (await onOne("POST", "/v1/actions?wait=30", { account_id: account, type: "post", params: { text } })).json;
    const paused = await eventually(
      async () => {
        const action = (await onTwo("GET", `/v1/actions/${created.id}?wait=10`)).json;
        return action.status === "needs_input" ? action : undefined;
      },
      { what: `the post to ask for its code (${one.output().slice(-2000)})`, timeoutMs: 90_000, everyMs: 200 },
    );
    expect(paused.challenge.kind).toBe("email_code");
    const mails = (await (await fetch(`${machines.sandbox.url}/_sandbox/outbox?to=${handle}`)).json()) as { code?: string }[];
    const code = mails.at(-1)!.code!;
    const answered = await onTwo("POST", `/v1/actions/${created.id}/answer`, { answer: code });
    expect(answered.status, JSON.stringify(answered.json)).toBeLessThan(300);
    const ended = await eventually(
      async () => {
        const action = (await onTwo("GET", `/v1/actions/${created.id}?wait=10`)).json;
        return ["succeeded", "failed", "canceled"].includes(action.status) ? action : undefined;
      },
      { what: "the post to end", timeoutMs: 90_000, everyMs: 200 },
    );
    expect(ended.status, JSON.stringify(ended)).toBe("succeeded");
    const posts = (await (await fetch(`${machines.sandbox.url}/_sandbox/posts?author=${handle}`)).json()) as { text: string }[];
    expect(posts.filter((post) => post.text === text)).toHaveLength(1);
  });
});
