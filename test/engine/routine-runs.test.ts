import { afterAll, beforeAll, expect, it } from "vitest";
import { createHarness, type Harness } from "../helpers/harness.js";

// A routine's runs (the web app's "last runs") are the actions that ran it, found by the name in
// their params — SQLite's json_extract and PostgreSQL's ->> (`npm run test:postgres`): not another
// routine's, not another type's, and only of the accounts the key may see.
let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h.stop();
  await h.destroy();
});

it("a routine's runs are the actions that ran it, newest first, of the accounts the key may see", async () => {
  for (const name of ["open_home", "open_home_too"]) expect((await h.request("POST", "/v1/routines", { body: { platform: "sandbox", name, steps: [{ goto: "/" }] } })).status).toBe(201);
  const accounts: string[] = [];
  for (const username of ["a", "b"]) accounts.push((await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username } })).json.id);
  const run = async (account: string, body: Record<string, unknown>): Promise<string> => {
    const created = await h.request("POST", "/v1/actions", { body: { account_id: account, ...body } });
    expect(created.status).toBe(202);
    return created.json.id;
  };
  const first = await run(accounts[0]!, { type: "routine", params: { routine: "open_home" } });
  const second = await run(accounts[1]!, { type: "routine", params: { routine: "open_home" } });
  const other = await run(accounts[0]!, { type: "routine", params: { routine: "open_home_too" } });
  await run(accounts[0]!, { type: "lookup_person", params: { handle: "open_home" } });

  const admin = (await h.engine.keys.authenticate(h.adminKey))!;
  const ids = async (principal: typeof admin, name: string, limit = 10): Promise<string[]> => (await h.engine.routines.runs(principal, name, limit)).map((action) => action.id);
  expect(await ids(admin, "open_home")).toEqual([second, first]);
  expect(await ids(admin, "open_home", 1)).toEqual([second]);
  expect(await ids(admin, "open_home_too")).toEqual([other]);
  expect(await ids(admin, "never_saved")).toEqual([]);
  const limited = (await h.engine.keys.authenticate(await h.key("read_only", { accountIds: [accounts[0]!] })))!;
  expect(await ids(limited, "open_home")).toEqual([first]);
});
