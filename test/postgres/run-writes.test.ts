import { afterAll, beforeAll, expect, it } from "vitest";
import type { ExecutionContext } from "../../src/engine/execution/index.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, gate } from "../helpers/scripted-executor.js";
import { rows, sql } from "../helpers/sql.js";
import { eventually } from "../helpers/wait.js";

// A run's own writes (its session kept, its account marked signed in, its commit point, its finish)
// take their action's row, and their account's, and run at READ COMMITTED (decisions: "The run's
// writes lock their rows"): sixteen runs on sixteen accounts ending at the same moment wait for
// nobody and are refused nothing. Under SERIALIZABLE the same moment made PostgreSQL refuse several
// of them (40001: each finish reads and writes rows beside the others' on the same index pages), and
// each refusal ran its whole transaction again. Runs under `npm run test:postgres` only.

const ACCOUNTS = 16;
const ROUNDS = 3;

let h: Harness;
let release = gate();
let started = 0;
const executor = new ScriptedExecutor().on("post", async (context: ExecutionContext) => {
  await context.markConnected(undefined);
  await context.saveSession(JSON.stringify({ cookies: [{ name: "sid", value: context.action.id }] }));
  started += 1;
  await release.promise;
  await context.commit();
  return { post_url: `https://sandbox.example/p/${context.action.id}` };
});

beforeAll(async () => {
  h = await createHarness({ executor, engine: { maxConcurrent: ACCOUNTS } });
});
afterAll(() => h?.destroy());

it("sixteen runs ending at once: every write lands once, and PostgreSQL refuses none of them", { timeout: 60_000 }, async () => {
  expect(h.store.dialect).toBe("postgres");
  const accounts: string[] = [];
  for (let i = 0; i < ACCOUNTS; i++) accounts.push((await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: `writer${i}` } })).json.id as string);
  const accountEvents = async (): Promise<number> => Number((await rows<{ n: string }>(h.store, sql`SELECT count(*)::text AS n FROM events WHERE type = 'account.updated'`))[0]!.n);
  const accountEventsBefore = await accountEvents();
  const retriedBefore = h.store.retriedTransactions;
  const ids: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    release = gate();
    started = 0;
    const created = await Promise.all(accounts.map((account_id) => h.request("POST", "/v1/actions", { body: { account_id, type: "post", params: { text: `round ${round}` } } })));
    const round_ids = created.map((response) => response.json.id as string);
    ids.push(...round_ids);
    await eventually(() => started === ACCOUNTS, { what: "all sixteen runs in flight" });
    release.open();
    await eventually(async () => (await Promise.all(round_ids.map((id) => h.store.actions.get(id)))).every((action) => action?.status === "succeeded"), { what: "all sixteen to succeed" });
  }
  expect(h.store.retriedTransactions - retriedBefore).toBe(0);

  // Each write landed once: one success each, charged once; each account signed in, its session kept, its change told once.
  const actions = await Promise.all(ids.map((id) => h.store.actions.get(id)));
  expect(actions.map((action) => [action?.status, action?.cost, action?.held, action?.committed_at !== undefined])).toEqual(ids.map(() => ["succeeded", actions[0]!.price, false, true]));
  for (const account of accounts) {
    expect((await h.store.accounts.get(account))?.status).toBe("connected");
    expect(await h.store.accounts.getSecret(account, "session")).toContain('"sid"');
  }
  expect((await accountEvents()) - accountEventsBefore).toBe(ACCOUNTS);
  const { balance } = (await rows<{ balance: string }>(h.store, sql`SELECT balance::text AS balance FROM workspaces WHERE id = ${h.workspaceId}`))[0]!;
  const { sum } = (await rows<{ sum: string }>(h.store, sql`SELECT coalesce(sum(amount), 0)::text AS sum FROM credit_ledger WHERE workspace_id = ${h.workspaceId}`))[0]!;
  expect(Number(sum)).toBe(Number(balance));
});
