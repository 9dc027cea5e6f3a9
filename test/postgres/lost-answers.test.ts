import { afterEach, describe, expect, it } from "vitest";
import type { ExecutionContext } from "../../src/engine/execution/index.js";
import { PostgresProxy, type LossPlan } from "../faults/proxy.js";
import { freshDatabase, templateDatabaseUrl } from "../helpers/database.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor } from "../helpers/scripted-executor.js";
import { rows, sql } from "../helpers/sql.js";
import { eventually } from "../helpers/wait.js";

// A coordinator whose connection is lost while PostgreSQL answers one of its writes (a restart, a
// balancer cut): the write may have been applied or not, and the coordinator cannot tell. The
// writes that carry a run — its claim, its taking of an answer, its commit point, its end — each
// meet both outcomes,
// through a proxy that drops the answer and closes the connection. The post must run once and
// end, and nothing may stay leased to a live runner that does not run it. Runs under `npm run
// test:postgres` only.

/** Each write, by the start of its statement (as Kysely sends it), and which answer is lost. */
const WRITES: { name: string; sql: string; at: LossPlan["at"] }[] = [
  { name: "the claim (its COMMIT)", sql: 'update "actions" set "status" = $1, "runner_id" = $2', at: "commit" },
  { name: "the commit point (one statement)", sql: 'update "actions" set "committed_at" = $1', at: "statement" },
  { name: "the run's end (its COMMIT)", sql: 'update "actions" set "updated_at" = $1, "status" = $2, "result"', at: "commit" },
  { name: "the taking of an answer (its COMMIT)", sql: 'update "challenges" set "answer_sealed" = $1', at: "commit" },
];

let h: Harness | undefined;
let proxy: PostgresProxy | undefined;
afterEach(async () => {
  await h?.destroy();
  await proxy?.close();
  h = undefined;
  proxy = undefined;
});

/** A harness on a fresh database reached through the proxy, an account with nothing running, and the runs its posts made. */
async function throughProxy(): Promise<{ h: Harness; proxy: PostgresProxy; account: string; ran: string[] }> {
  const url = await freshDatabase(templateDatabaseUrl());
  const server = new URL(url);
  proxy = await PostgresProxy.start({ host: server.hostname, port: Number(server.port) });
  const ran: string[] = [];
  const post = (asks: boolean) => async (context: ExecutionContext) => {
    ran.push(context.action.id);
    if (asks) {
      const code = await context.challenge({ kind: "email_code", message: "Enter the code we sent." });
      if (code !== "246810") throw new Error(`typed ${code}`);
    }
    await context.commit();
    return { post_url: `https://sandbox.example/p/${context.action.id}` };
  };
  // A post asks for a code; the keyed creates' post (by its text) does not.
  const executor = new ScriptedExecutor().on("post", post(true)).on("keyed", post(false));
  h = await createHarness({ executor, location: { databaseUrl: proxy.url(url) } });
  const account = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "lost-answers" } })).json.id as string;
  await eventually(async () => !(await h!.store.actions.hasActive(account)), { what: "nothing else to run on the account" });
  return { h, proxy, account, ran };
}

describe("a write whose answer PostgreSQL's connection lost", () => {
  for (const write of WRITES) {
    for (const applied of [true, false]) {
      it(`${write.name}, ${applied ? "applied" : "not applied"}: the post runs once and ends, and is never left held and not run`, { timeout: 60_000 }, async () => {
        const { h, proxy, account, ran } = await throughProxy();
        const lost = proxy.loseAnswer(write.sql, { at: write.at, applied });
        const created = await h.request("POST", "/v1/actions", { body: { account_id: account, type: "post", params: { text: "one answer lost" } } });
        expect(created.status, created.raw).toBe(202);
        const id = created.json.id as string;
        await eventually(async () => (await h.store.actions.get(id))?.status === "needs_input", { what: "the post to ask for its code" });
        const answered = await h.request("POST", `/v1/actions/${id}/answer`, { body: { answer: "246810" } });
        expect(answered.status, answered.raw).toBeLessThan(300);
        const event = await lost;
        expect(event.statement.toLowerCase().startsWith(write.sql.toLowerCase())).toBe(true);

        // A wait begun after the loss hears the end: in this process too, whoever wrote it.
        const waited = await h.request("GET", `/v1/actions/${id}?wait=20`);
        expect(waited.json.status, waited.raw).toBe("succeeded");
        expect(ran).toEqual([id]);
        const action = (await h.store.actions.get(id))!;
        expect([action.status, action.cost, action.held, action.committed_at !== undefined]).toEqual(["succeeded", action.price, false, true]);
        // It never went back to the queue: the claim that took it is the one that ran it.
        const statuses = await rows<{ status: string }>(h.store, sql`SELECT data::json->>'status' AS status FROM events WHERE subject_id = ${id} AND type = 'action.updated' ORDER BY seq`);
        expect(statuses.map((row) => row.status)).toEqual(["queued", "running", "needs_input", "running", "succeeded"]);
        expect(await h.store.actions.heldBy(action.runner_id ?? "none")).toEqual([]);
      });
    }
  }
});

/** A keyed create's writes: its claim of the key, and the create itself (the action with the key attached). */
const KEYED_WRITES: { name: string; sql: string; at: LossPlan["at"] }[] = [
  { name: "the key's claim (one statement)", sql: 'insert into "idempotency_keys"', at: "statement" },
  { name: "the create (its COMMIT)", sql: 'insert into "actions"', at: "commit" },
];

describe("a keyed create whose answer PostgreSQL's connection lost", () => {
  for (const write of KEYED_WRITES) {
    for (const applied of [true, false]) {
      it(`${write.name}, ${applied ? "applied" : "not applied"}: the request, or the client's retry with the key, gets the one action; no second, and the key never held in flight for good`, { timeout: 60_000 }, async () => {
        const { h, proxy, account, ran } = await throughProxy();
        const body = { account_id: account, type: "post", params: { text: "keyed" } };
        const headers = { "idempotency-key": `lost-${write.at}-${applied}` };
        const lost = proxy.loseAnswer(write.sql, { at: write.at, applied });
        const first = await h.request("POST", "/v1/actions", { body, headers });
        await lost;
        // Applied, the request knows it by the key and answers with the action; not applied, it may fail (nothing was made).
        if (applied) expect(first.status, first.raw).toBe(202);
        // The client heard nothing it could trust, and sends the request again with its key.
        const again = await h.request("POST", "/v1/actions", { body, headers });
        expect([200, 202], again.raw).toContain(again.status);
        const id = again.json.id as string;
        if (first.status < 300) expect(first.json.id).toBe(id);
        expect((await h.request("GET", `/v1/actions/${id}?wait=20`)).json.status).toBe("succeeded");
        const made = await rows<{ id: string }>(h.store, sql`SELECT id FROM actions WHERE type = 'post'`);
        expect(made.map((row) => row.id)).toEqual([id]);
        expect(ran).toEqual([id]);
        const keys = await rows<{ state: string; action_id: string }>(h.store, sql`SELECT state, action_id FROM idempotency_keys`);
        expect(keys).toEqual([{ state: "done", action_id: id }]);
      });
    }
  }
});

describe("an owner's sign-in hold whose answer PostgreSQL's connection lost", () => {
  for (const applied of [true, false]) {
    it(`${applied ? "applied" : "not applied"}: the hold fails, and holds nothing: the account's next post runs at once, not after the hold's expiry`, { timeout: 60_000 }, async () => {
      const { h, proxy, account, ran } = await throughProxy();
      const lost = proxy.loseAnswer('insert into "account_holds"', { at: "commit", applied });
      await expect(h.engine.core.runner.holdAccount(account)).rejects.toThrow(/connection|PostgreSQL/i);
      await lost;
      const holds = await rows(h.store, sql`SELECT account_id FROM account_holds`);
      expect(holds).toEqual([]);
      const created = await h.request("POST", "/v1/actions", { body: { account_id: account, type: "post", params: { text: "keyed" } } });
      expect((await h.request("GET", `/v1/actions/${created.json.id}?wait=20`)).json.status).toBe("succeeded");
      expect(ran).toEqual([created.json.id]);
    });
  }
});
