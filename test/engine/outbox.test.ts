import { afterEach, beforeEach, expect, it } from "vitest";
import { recordActionEvent } from "../../src/engine/outbox.js";
import { createHarness, type Harness } from "../helpers/harness.js";

let h: Harness;
beforeEach(() => {
  h = createHarness({ engine: { webhooks: { allowPrivate: true, intervalMs: 60_000 } } });
});
afterEach(async () => {
  await h.destroy();
});

const statusesOf = (actionId: string): string[] =>
  h.store.events
    .after(h.workspaceId, 0, 1_000)
    .filter((event) => event.subject_id === actionId)
    .map((event) => event.data.status as string);

it("each status change of an action is one event, written with the change, fanned out to each endpoint", async () => {
  const admin = h.engine.authenticate(h.adminKey)!;
  await h.engine.createWebhook(admin, { url: "http://127.0.0.1:9/hook" });
  const account = h.engine.createAccount(admin, { platform: "sandbox", username: "alice", password: "pw" });
  const action = h.engine.createAction(admin, { account_id: account.id, type: "post", params: { text: "hi" } });
  await h.engine.waitFor(action.id, 5);
  expect(statusesOf(action.id)).toEqual(["queued", "running", "succeeded"]);
  const pending = h.store.db.prepare("SELECT count(*) FROM webhook_deliveries").pluck().get();
  // One delivery per event: the account's and the action's three.
  expect(pending).toBe(4);
});

it("a change that rolls back leaves no event and no delivery behind", async () => {
  const admin = h.engine.authenticate(h.adminKey)!;
  await h.engine.createWebhook(admin, { url: "http://127.0.0.1:9/hook" });
  const account = h.engine.createAccount(admin, { platform: "sandbox", username: "alice", password: "pw" });
  const action = h.engine.createAction(admin, { account_id: account.id, type: "post", params: { text: "hi" } });
  await h.engine.waitFor(action.id, 5);
  const count = (table: string): number => h.store.db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
  const before = [count("events"), count("webhook_deliveries")];
  expect(() =>
    h.store.transaction(() => {
      recordActionEvent(h.store, action.id, h.engine.core.lifecycle.now());
      throw new Error("the change fails after its event was written");
    }),
  ).toThrow("the change fails");
  expect([count("events"), count("webhook_deliveries")]).toEqual(before);
});
