import { afterAll, beforeAll, expect, it } from "vitest";
import { createHarness, type Harness } from "../helpers/harness.js";
import { SCRIPTED_PLATFORM, ScriptedExecutor } from "../helpers/scripted-executor.js";
import { call, connect } from "../mcp/support.js";

// A routine saved by save_routine names the browser_steps action it came from (`from_action_id`).
// A key limited to some accounts reads the routine (routines are the workspace's) but learns of
// that action only if it may read the action: over REST (list and one routine, its versions too)
// and MCP (list_routines, list_platforms), as it is refused the action itself.
let h: Harness;
let fromA: string;
let accountA: string;
let accountB: string;

beforeAll(async () => {
  const executor = new ScriptedExecutor().on("browser_steps", async () => ({ extracted: {}, steps: [] }));
  h = await createHarness({ executor, engine: { platforms: [{ ...SCRIPTED_PLATFORM, actions: [...SCRIPTED_PLATFORM.actions, "browser_steps"] }] } });
  accountA = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "ann" } })).json.id;
  accountB = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "ben" } })).json.id;
  const steps = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: accountA, type: "browser_steps", params: { steps: [{ goto: "/" }, { click: { role: "button", name: "Save" } }] } } });
  expect(steps.json.status).toBe("succeeded");
  fromA = steps.json.id;
  const admin = (await h.engine.keys.authenticate(h.adminKey))!;
  await h.engine.routines.saveFromAction(admin, { platform: "sandbox", name: "saved_from_ann", from_action_id: fromA, params: {} });
  await h.engine.routines.saveFromAction(admin, { platform: "sandbox", name: "saved_from_ann", from_action_id: fromA, params: {} });
});
afterAll(async () => {
  await h.stop();
  await h.destroy();
});

/** Every `from_action_id` a key reads of the routine, over REST and MCP. */
async function sourcesSeen(key: string): Promise<unknown[]> {
  const one = (await h.request("GET", "/v1/routines/saved_from_ann", { key })).json;
  const [listed] = (await h.request("GET", "/v1/routines", { key })).json.data;
  const client = await connect(h, { principal: (await h.engine.keys.authenticate(key))! });
  const [overMcp] = (await call(client, "list_routines", {})).data.data;
  const platform = (await call(client, "list_platforms", {})).data.data.find((candidate: { name: string }) => candidate.name === "sandbox");
  return [one.from_action_id, ...one.versions.map((version: { from_action_id?: string }) => version.from_action_id), listed.from_action_id, overMcp.from_action_id, platform.routines[0].from_action_id];
}

it("a key limited to other accounts reads the routine without the action it was saved from; a key that may read that action sees it", async () => {
  const onlyB = await h.key("operator", { accountIds: [accountB] });
  expect((await h.request("GET", `/v1/actions/${fromA}`, { key: onlyB })).status).toBe(403);
  expect(await sourcesSeen(onlyB)).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
  const raw = (await h.request("GET", "/v1/routines/saved_from_ann", { key: onlyB })).raw;
  expect(raw).not.toContain(fromA);

  const onlyA = await h.key("read_only", { accountIds: [accountA] });
  expect(await sourcesSeen(onlyA)).toEqual([fromA, fromA, fromA, fromA, fromA, fromA]);
  expect(await sourcesSeen(h.adminKey)).toEqual([fromA, fromA, fromA, fromA, fromA, fromA]);
});
