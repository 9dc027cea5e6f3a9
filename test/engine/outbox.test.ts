import { afterEach, beforeEach, expect, it } from "vitest";
import { recordActionEvent } from "../../src/engine/outbox/index.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { countRows } from "../helpers/sql.js";

let h: Harness;
beforeEach(async () => {
  h = await createHarness({ engine: { webhooks: { allowPrivate: true } } });
});
afterEach(async () => {
  await h.destroy();
});

const statusesOf = async (actionId: string): Promise<string[]> =>
  (await h.store.events.list(h.workspaceId, 1_000)).filter((event) => event.subject_id === actionId).map((event) => event.data.status as string);

it("each status change of an action is one event, written with the change, fanned out to each endpoint", async () => {
  const admin = (await h.engine.keys.authenticate(h.adminKey))!;
  await h.engine.webhooks.create(admin, { url: "http://127.0.0.1:9/hook" });
  const account = await h.engine.accounts.create(admin, { platform: "sandbox", username: "alice", password: "pw" });
  const action = await h.engine.createAction(admin, { account_id: account.id, type: "post", params: { text: "hi" } });
  await h.engine.waitFor(action.id, 5);
  expect(await statusesOf(action.id)).toEqual(["queued", "running", "succeeded"]);
  const pending = await countRows(h.store, "webhook_deliveries");
  // One delivery per event: the account's and the action's three.
  expect(pending).toBe(4);
});

it("a change that rolls back leaves no event and no delivery behind", async () => {
  const admin = (await h.engine.keys.authenticate(h.adminKey))!;
  await h.engine.webhooks.create(admin, { url: "http://127.0.0.1:9/hook" });
  const account = await h.engine.accounts.create(admin, { platform: "sandbox", username: "alice", password: "pw" });
  const action = await h.engine.createAction(admin, { account_id: account.id, type: "post", params: { text: "hi" } });
  await h.engine.waitFor(action.id, 5);
  const counts = async (): Promise<number[]> => [await countRows(h.store, "events"), await countRows(h.store, "webhook_deliveries")];
  const before = await counts();
  await expect(
    h.store.transaction(async () => {
      await recordActionEvent(h.store, action.id, h.engine.core.lifecycle.now());
      throw new Error("the change fails after its event was written");
    }),
  ).rejects.toThrow("the change fails");
  expect(await counts()).toEqual(before);
});
