import { afterEach, beforeEach, expect, it } from "vitest";
import { silentLogger } from "../../src/engine/logger.js";
import { WebhookDispatcher } from "../../src/events/webhook-dispatcher.js";
import { writeHere, type DeliveryWriter } from "../../src/events/webhook-writes.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { eventually } from "../helpers/wait.js";
import { Receiver } from "./support.js";

// A dispatcher stopped (serve shutting down) while its claim of a batch is on its way: the batch
// it claimed is its to send. Dropped, its deliveries stayed leased for a minute, and every later
// event of their actions waited behind them after the restart.

let h: Harness;
const receiver = new Receiver();

beforeEach(async () => {
  await receiver.start();
  // The engine's own dispatcher stops at once: the one under test is the only one claiming.
  h = await createHarness({ engine: { webhooks: { allowPrivate: true } } });
  await h.engine.webhooks.stop();
});

afterEach(async () => {
  await h.destroy();
  await receiver.stop();
});

it("a batch claimed while it stops is sent and recorded before stop() returns, and nothing is left leased", async () => {
  const created = await h.request("POST", "/v1/webhooks", { body: { url: receiver.url } });
  expect(created.status).toBe(201);
  receiver.secret = created.json.secret;
  // One event for the endpoint: the account's creation.
  expect((await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "alice", password: "pw-123456" } })).status).toBe(201);

  // The claim reaches the store; its answer is held until the stop has begun.
  let claimedCount = 0;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const here = writeHere(h.store);
  const write = (async (name, input) => {
    const output = await here(name, input);
    if (name === "claim" && claimedCount === 0) {
      claimedCount = (output as unknown[]).length;
      await held;
    }
    return output;
  }) as DeliveryWriter;
  // Signed at real time: the receiver checks the signature's timestamp against its own clock.
  const dispatcher = new WebhookDispatcher({ store: h.store, write, clock: { now: () => new Date() }, logger: silentLogger, publicUrl: () => "http://127.0.0.1:8787" }, { allowPrivate: true });
  dispatcher.start();
  await eventually(() => claimedCount > 0, { what: "the first claim" });

  const stopped = dispatcher.stop();
  release();
  await stopped;
  expect(receiver.received).toHaveLength(claimedCount);
  expect(receiver.received.map(({ verified, answered }) => ({ verified, answered }))).toEqual(Array(claimedCount).fill({ verified: true, answered: 200 }));
  // Recorded as delivered, each once: none pending under a lease.
  const states = h.store.sqlite!.prepare("SELECT state, count(*) AS n FROM webhook_deliveries GROUP BY state").all();
  expect(states).toEqual([{ state: "succeeded", n: claimedCount }]);
});
