import { afterAll, beforeAll, expect, it } from "vitest";
import type { Harness } from "../helpers/harness.js";
import { eventually } from "../helpers/wait.js";
import { WebClient, webHarness } from "../web/support.js";

// The web app's routines list (each routine at its latest version, with its last run) costs the
// same statements for 2 routines as for 12: one query for the page's last runs and one for their
// latest versions, not one of each per routine (N+1). Counted by the store (store.statementCount),
// on SQLite and PostgreSQL (`npm run test:postgres`); a limited key's page too.
let h: Harness;
let accounts: string[];

beforeAll(async () => {
  h = await webHarness();
  accounts = [];
  for (const username of ["ann", "ben"]) accounts.push((await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username } })).json.id);
});
afterAll(async () => {
  await h.stop();
  await h.destroy();
});

async function saveAndRun(index: number): Promise<void> {
  const name = `routine_${String(index).padStart(2, "0")}`;
  expect((await h.request("POST", "/v1/routines", { body: { platform: "sandbox", name, steps: [{ goto: "/" }] } })).status).toBe(201);
  // A second version, and runs on both accounts: the page shows the latest of each.
  expect((await h.request("PUT", `/v1/routines/${name}`, { body: { params: { type: "object", properties: {} }, steps: [{ goto: "/feed" }] } })).status).toBe(200);
  for (const account of accounts) expect((await h.request("POST", "/v1/actions", { body: { account_id: account, type: "routine", params: { routine: name } } })).status).toBe(202);
}

/** A person signed in to the web app with the key. */
async function session(key: string): Promise<WebClient> {
  const client = new WebClient(h.app);
  expect((await client.send("POST", "/app/sign-in", { form: { key, next: "/app/routines" } })).status).toBe(303);
  return client;
}

/**
 * The statements one GET of the routines page costs, and the page. The count is the store's, which
 * the engine's own sweeps add to meanwhile: the fewest of five loads is the page's own.
 */
async function pageCost(client: WebClient): Promise<{ statements: number; html: string }> {
  await eventually(async () => (await h.store.actions.withStatus(["queued", "running"])).length === 0, { what: "the routines' runs to end" });
  let statements = Number.POSITIVE_INFINITY;
  let html = "";
  for (let load = 0; load < 5; load += 1) {
    const before = h.store.statementCount;
    const response = await client.send("GET", "/app/routines");
    statements = Math.min(statements, h.store.statementCount - before);
    expect(response.status).toBe(200);
    html = response.text;
  }
  return { statements, html };
}

it("the routines page costs as many statements for 12 routines as for 2, each shown at its latest version with its last run", async () => {
  const admin = await session(h.adminKey);
  const limited = await session(await h.key("read_only", { accountIds: [accounts[0]!] }));
  for (const index of [0, 1]) await saveAndRun(index);
  const few = { admin: await pageCost(admin), limited: await pageCost(limited) };
  for (let index = 2; index < 12; index += 1) await saveAndRun(index);
  const many = { admin: await pageCost(admin), limited: await pageCost(limited) };
  expect(many.admin.statements).toBe(few.admin.statements);
  expect(many.limited.statements).toBe(few.limited.statements);

  // What it shows: every routine at version 2, each with the newest run the key may see.
  expect(many.admin.html.match(/href="\/app\/routines\/routine_\d\d"/g)).toHaveLength(12);
  const admin_ = (await h.engine.keys.authenticate(h.adminKey))!;
  for (const name of ["routine_00", "routine_11"]) {
    const [newest] = await h.engine.routines.runs(admin_, name, 1);
    expect(many.admin.html).toContain(`href="/app/actions/${newest!.id}"`);
    const [newestOfAnn] = (await h.engine.routines.runs(admin_, name, 10)).filter((action) => action.account_id === accounts[0]);
    expect(many.limited.html).toContain(`href="/app/actions/${newestOfAnn!.id}"`);
    expect(many.limited.html).not.toContain(`href="/app/actions/${newest!.id}"`);
  }
  expect(many.admin.html).not.toMatch(/never run/);
});
