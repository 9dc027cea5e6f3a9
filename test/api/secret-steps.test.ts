import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PACE_JITTER } from "../../src/domain/pace.js";
import type { ExecutionContext } from "../../src/engine/execution/index.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { readRawFile } from "../helpers/raw-file.js";
import { SCRIPTED_PLATFORM, ScriptedExecutor, eventually } from "../helpers/scripted-executor.js";
import { countRows, rows, sql } from "../helpers/sql.js";

// A browser_steps fill marked secret (issue 43 §5): its value is sealed beside the action at create,
// never written to the action's params (the row, its events, a stored idempotent response, a read
// of it), put back for the run — also by a process started after the action was queued — and
// dropped once the action has ended. On SQLite (the raw file) and PostgreSQL (the rows as text).
const SECRET = "hunter2-correct-horse-battery";
const platforms = [{ ...SCRIPTED_PLATFORM, actions: [...SCRIPTED_PLATFORM.actions, "browser_steps" as const] }];

let h: Harness;
const typed: string[] = [];
const executor = new ScriptedExecutor().on("browser_steps", async (context: ExecutionContext) => {
  const { steps } = context.action.params as { steps: { value?: string }[] };
  typed.push(steps.map((step) => step.value ?? "").join("|"));
  return { extracted: {} };
});

beforeAll(async () => {
  h = await createHarness({ executor, engine: { platforms } });
});
afterAll(() => h?.destroy());

/** Every stored byte (SQLite's files, journal included) or every row as PostgreSQL prints it. */
async function storedText(harness: Harness): Promise<string> {
  if (harness.store.sqlite) return readdirSync(harness.dir).map((file) => readRawFile(join(harness.dir, file)).toString("latin1")).join("\n");
  const tables = await rows<{ name: string }>(harness.store, sql`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'`);
  const texts: string[] = [];
  for (const { name } of tables) texts.push(...(await rows<{ row: string }>(harness.store, sql`SELECT t::text AS row FROM ${sql.table(name)} t`)).map((row) => row.row));
  return texts.join("\n");
}

it("a fill marked secret is stored nowhere in plain text, shows [secret] on every read, is typed by a run after a restart, and is dropped once the action ends", async () => {
  const account = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "keeper" } })).json.id as string;
  // One browser_steps start an hour for the account: the second waits, queued, across the restart.
  expect((await h.request("PATCH", `/v1/accounts/${account}`, { body: { pace: { browser_steps: { min_gap_seconds: 600 } } } })).status).toBe(200);
  const first = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: account, type: "browser_steps", params: { steps: [{ goto: "/" }] } } });
  expect(first.json.status).toBe("succeeded");

  const body = {
    account_id: account,
    type: "browser_steps",
    params: { steps: [{ goto: "/login" }, { fill: { label: "Password" }, value: SECRET, secret: true }, { fill: { label: "Name" }, value: "plain words" }] },
  };
  const created = await h.request("POST", "/v1/actions", { body, headers: { "Idempotency-Key": "secret-fill-1" } });
  expect(created.status).toBe(202);
  expect(created.json.status).toBe("queued");
  const id = created.json.id as string;
  const shown = [{ goto: "/login" }, { fill: { label: "Password" }, value: "[secret]", secret: true }, { fill: { label: "Name" }, value: "plain words" }];
  expect(created.json.params.steps).toEqual(shown);
  const replayed = await h.request("POST", "/v1/actions", { body, headers: { "Idempotency-Key": "secret-fill-1" } });
  expect(replayed.headers.get("idempotency-replayed")).toBe("true");
  const read = await h.request("GET", `/v1/actions/${id}`);
  expect(read.json.params.steps).toEqual(shown);
  for (const response of [created, replayed, read]) expect(response.raw).not.toContain(SECRET);
  // Sealed beside the action, and only there: not in its row, its events or the stored response.
  const recorded = await rows<{ data: string }>(h.store, sql`SELECT data FROM events WHERE subject_id = ${id}`);
  expect(recorded.length).toBeGreaterThan(0);
  expect(recorded.map((event) => event.data).join("\n")).toContain('"[secret]"');
  expect(await h.store.routines.secretParams(id)).toEqual({ "steps.1.value": SECRET });
  expect(await storedText(h)).not.toContain(SECRET);
  expect(await storedText(h)).toContain("plain words");

  // A new process on the same data, after the pace's gap (600 s, plus up to 20 % jitter: at most
  // 720 s): the queued action runs with its secret.
  await h.stop();
  const clock = h.clock;
  clock.advance(600_000 * (1 + PACE_JITTER) + 1_000);
  const again = await createHarness({ executor, engine: { platforms }, dir: h.dir, location: h.location, masterKey: h.masterKey, adminKey: h.adminKey, clock });
  h = again;
  // Read from the store: polling the API would meet the key's rate limit.
  await eventually(async () => (await h.store.actions.get(id))?.status === "succeeded", { what: "the queued action to succeed after the restart" });
  expect(typed.at(-1)).toBe(`|${SECRET}|plain words`);
  expect(await countRows(h.store, "action_secret_params")).toBe(0);
  expect((await h.request("GET", `/v1/actions/${id}`)).json.params.steps).toEqual(shown);
  expect(await storedText(h)).not.toContain(SECRET);
});

it("a fill not marked secret is kept as the agent gave it (what save_routine names values from)", async () => {
  const account = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "plain" } })).json.id as string;
  const created = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: account, type: "browser_steps", params: { steps: [{ fill: { label: "Bio" }, value: "Hello there" }] } } });
  expect(created.json).toMatchObject({ status: "succeeded", params: { steps: [{ fill: { label: "Bio" }, value: "Hello there" }] } });
  expect(typed.at(-1)).toBe("Hello there");
  expect(await countRows(h.store, "action_secret_params")).toBe(0);
});
