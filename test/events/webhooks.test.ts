import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { EventStream, Receiver } from "./support.js";
import { openFilesOf } from "../helpers/locks.js";
import { readRawFile } from "../helpers/raw-file.js";

// Events (DESIGN §13) through a real service (real Chromium, SQLite, HTTP) and the sandbox: signed
// webhooks to a real HTTP receiver, the SSE stream, and feedback with its sealed screenshot.

const RETRIES = [300, 600, 1_000];

let live: LiveService;
const receiver = new Receiver();
let webhookId: string;

beforeAll(async () => {
  live = await startLiveService({ env: { ACTION_SERVICE_WEBHOOK_ALLOW_PRIVATE: "true" }, server: { webhooks: { retryDelaysMs: RETRIES } } });
  await receiver.start();
}, 60_000);
afterAll(async () => {
  await receiver.stop();
  await live?.close();
});

/** This process's open descriptors on the service's database file: one per connection to it. */
function databaseConnections(): number {
  const file = join(live.config.dataDir, "action-service.db");
  return openFilesOf(process.pid, file).filter((path) => path === file).length;
}

describe("the delivery thread", () => {
  it("starts with the first delivery to send: a service that has none runs no thread and opens no second connection", async () => {
    const engineOnly = databaseConnections();
    const accountId = await live.account(await live.user("none"));
    expect((await live.run(accountId, "connect")).status).toBe("succeeded");
    // Events were written, with no endpoint to send them to: nothing is queued, no thread runs.
    expect(databaseConnections()).toBe(engineOnly);

    const first = new Receiver();
    await first.start();
    try {
      const endpoint = await live.api("POST", "/v1/webhooks", { url: first.url });
      expect(endpoint.status).toBe(201);
      const action = await live.run(accountId, "connect");
      await live.until(() => first.statusesOf(action.id).includes("succeeded"), 15_000);
      // The thread reads on a connection of its own.
      expect(databaseConnections()).toBe(engineOnly + 1);
      expect((await live.api("DELETE", `/v1/webhooks/${endpoint.json.id}`)).status).toBe(204);
    } finally {
      await first.stop();
    }
  }, 60_000);
});

describe("webhooks", () => {
  beforeAll(async () => {
    const created = await live.api("POST", "/v1/webhooks", { url: receiver.url });
    expect(created.status).toBe(201);
    expect(created.json.secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
    receiver.secret = created.json.secret;
    webhookId = created.json.id;
  });

  it("deliver every status of an action, in order, signed with the endpoint's secret, and the account's status changes", async () => {
    const handle = await live.user("email");
    const accountId = await live.account(handle);
    const action = await live.run(accountId, "connect");
    expect(action.status).toBe("needs_input");
    await live.api("POST", `/v1/actions/${action.id}/answer`, { answer: await live.latestCode(handle) });
    await live.finished(action.id);
    await live.until(() => receiver.statusesOf(action.id).at(-1) === "succeeded", 15_000);
    expect(receiver.statusesOf(action.id)).toEqual(["queued", "running", "needs_input", "running", "succeeded"]);
    const mine = receiver.received.filter((item) => item.event.data.id === action.id || item.event.data.id === accountId);
    expect(mine.every((item) => item.verified)).toBe(true);
    expect(mine.every((item) => item.id === item.event.id && /^evt_/.test(item.id))).toBe(true);
    const paused = mine.find((item) => item.event.data.status === "needs_input")!;
    expect(paused.event.data.challenge).toMatchObject({ kind: "email_code", sign_in_url: expect.stringMatching(/\/live\/[A-Za-z0-9_-]{43}$/) });
    const account = mine.filter((item) => item.event.type === "account.updated").map((item) => item.event.data.status);
    expect(account).toEqual(["new", "connected"]);
    // The signature is over id.timestamp.body with this secret only.
    const tampered = { ...paused, body: paused.body.replace("needs_input", "succeeded") };
    expect(() => new Webhook(receiver.secret!).verify(tampered.body, { "webhook-id": tampered.id, "webhook-timestamp": tampered.timestamp, "webhook-signature": tampered.signature })).toThrow();
  }, 60_000);

  it("a receiver that answers 500 gets the event again with the same webhook-id, and the log shows both attempts", async () => {
    const accountId = await live.account(await live.user("none"));
    let failedId: string | undefined;
    // The action's first event (queued) is refused once; the later ones must wait for it.
    receiver.answer = ({ id, attempt, event }) => {
      if (failedId === undefined && event.type === "action.updated" && event.data.account_id === accountId) failedId = id;
      return id === failedId && attempt === 1 ? 500 : 200;
    };
    const action = await live.run(accountId, "post", { text: "retried delivery" });
    await live.until(() => receiver.statusesOf(action.id).includes("succeeded"), 15_000);
    receiver.answer = () => 200;
    const copies = receiver.received.filter((item) => item.id === failedId);
    expect(copies).toHaveLength(2);
    expect(copies[0]!.body).toBe(copies[1]!.body);
    const log = await live.api("GET", `/v1/webhooks/${webhookId}/deliveries?limit=100`);
    const delivery = log.json.data.find((item: { event_id: string }) => item.event_id === failedId);
    expect(delivery).toMatchObject({ state: "succeeded", attempts: 2, last_status: 200 });
    // In order per action even across the retry: what came after the refused event waited for it.
    expect(receiver.statusesOf(action.id)).toEqual(["queued", "running", "succeeded"]);
  }, 60_000);

  it("a receiver down across a service restart still gets every event, in order, once it is back", async () => {
    const accountId = await live.account(await live.user("none"));
    const port = Number(new URL(receiver.url).port);
    await receiver.stop();
    const action = await live.run(accountId, "post", { text: "while the receiver was down" });
    expect(action.status).toBe("succeeded");
    await live.restart();
    await receiver.start(port);
    await live.until(() => receiver.statusesOf(action.id).includes("succeeded"), 20_000);
    expect(receiver.statusesOf(action.id)).toEqual(["queued", "running", "succeeded"]);
  }, 60_000);

  it("a manual retry sends a delivered event again with the same webhook-id", async () => {
    const log = await live.api("GET", `/v1/webhooks/${webhookId}/deliveries?limit=1`);
    const [latest] = log.json.data;
    const before = receiver.received.filter((item) => item.id === latest.event_id).length;
    const retried = await live.api("POST", `/v1/webhooks/${webhookId}/deliveries/${latest.id}/retry`);
    expect(retried.status).toBe(202);
    await live.until(() => receiver.received.filter((item) => item.id === latest.event_id).length === before + 1, 10_000);
  });

  it("are sent from a thread of their own that yields the CPU to the pages (nice 10; the process's other threads 0)", async () => {
    // /proc/<pid>/task/<tid>/stat: the nice value is the 19th field, the 17th after the command's closing parenthesis.
    const niceOf = (tid: string): number => Number(readFileSync(`/proc/self/task/${tid}/stat`, "utf8").split(") ")[1]!.split(" ")[16]);
    const lowered = (): number => readdirSync("/proc/self/task").filter((tid) => niceOf(tid) === 10).length;
    await live.until(() => lowered() > 0, 10_000);
    expect(lowered()).toBe(1);
    expect(niceOf(String(process.pid))).toBe(0);
  });

  it("a loopback or private URL is refused when private targets are not allowed", async () => {
    const strict = await startLiveService();
    try {
      for (const url of ["http://127.0.0.1:9/hook", "http://localhost/hook", "http://10.1.2.3/hook", "http://[::1]/hook", "http://169.254.169.254/latest"]) {
        const refused = await strict.api("POST", "/v1/webhooks", { url });
        expect(refused.status, url).toBe(422);
        expect(refused.json.error.message, url).toContain("ACTION_SERVICE_WEBHOOK_ALLOW_PRIVATE=true");
      }
      expect((await strict.api("POST", "/v1/webhooks", { url: "ftp://example.com/" })).status).toBe(422);
      expect((await strict.api("GET", "/v1/webhooks")).json.data).toEqual([]);
    } finally {
      await strict.close();
    }
  }, 60_000);
});

describe("the event stream", () => {
  it("delivers events as they commit and resumes after Last-Event-ID with what happened meanwhile", async () => {
    const accountId = await live.account(await live.user("none"));
    const stream = new EventStream(`${live.url}/v1/events`, live.key);
    await stream.open();
    expect(stream.status).toBe(200);
    const first = await live.run(accountId, "post", { text: "streamed" });
    await live.until(() => stream.events.some((event) => event.data.data.id === first.id && event.data.data.status === "succeeded"), 15_000);
    const statuses = stream.events.filter((event) => event.data.data.id === first.id).map((event) => event.data.data.status);
    expect(statuses).toEqual(["queued", "running", "succeeded"]);
    const last = stream.events.at(-1)!;
    expect(last.id).toBe(last.data.id);
    expect(last.event).toBe("action.updated");
    await stream.close();

    const missed = await live.run(accountId, "post", { text: "while nobody listened" });
    const resumed = new EventStream(`${live.url}/v1/events`, live.key, last.id);
    await resumed.open();
    await live.until(() => resumed.events.some((event) => event.data.data.id === missed.id && event.data.data.status === "succeeded"), 15_000);
    expect(resumed.events.some((event) => event.id === last.id)).toBe(false);
    expect(resumed.events.filter((event) => event.data.data.id === missed.id).map((event) => event.data.data.status)).toEqual(["queued", "running", "succeeded"]);
    await resumed.close();
  }, 60_000);

  it("a read_only key limited to one account sees only that account's events", async () => {
    const seen = await live.account(await live.user("none"));
    const unseen = await live.account(await live.user("none"));
    const key = (await live.server.service.engine.keys.issue({ role: "read_only", accountIds: [seen] })).key;
    const stream = new EventStream(`${live.url}/v1/events`, key);
    await stream.open();
    const hidden = await live.run(unseen, "post", { text: "not for the limited key" });
    const shown = await live.run(seen, "post", { text: "for the limited key" });
    await live.until(() => stream.events.some((event) => event.data.data.id === shown.id && event.data.data.status === "succeeded"), 15_000);
    expect(stream.events.length).toBeGreaterThan(0);
    expect(stream.events.every((event) => event.data.data.account_id === seen || event.data.data.id === seen)).toBe(true);
    expect(JSON.stringify(stream.events)).not.toContain(hidden.id);
    await stream.close();
  }, 60_000);
});

describe("feedback", () => {
  it("is kept with and without an action; a ui_changed failure's page is kept sealed and shown only to admins", async () => {
    const plain = await live.api("POST", "/v1/feedback", { message: "Please add a Mastodon driver." });
    expect(plain.status).toBe(201);
    expect(plain.json).toMatchObject({ object: "feedback", message: "Please add a Mastodon driver.", has_screenshot: false });

    const accountId = await live.account(await live.user("none"));
    await live.run(accountId, "connect");
    await live.sandboxApi("POST", "/_sandbox/settings", { redesign: true });
    const failed = await live.run(accountId, "post", { text: "after the redesign" });
    await live.sandboxApi("POST", "/_sandbox/settings", { redesign: false });
    expect(failed.error.code).toBe("ui_changed");
    const operator = (await live.server.service.engine.keys.issue({ role: "operator" })).key;
    const sent = await live.api("POST", "/v1/feedback", { message: "The post button moved.", action_id: failed.id }, { key: operator });
    expect(sent.status).toBe(201);
    expect(sent.json).toMatchObject({ action_id: failed.id, platform: "sandbox", type: "post", error: { code: "ui_changed" }, has_screenshot: true });

    const listed = await live.api("GET", "/v1/feedback");
    expect(listed.json.data.map((item: { id: string }) => item.id)).toEqual([sent.json.id, plain.json.id]);
    expect((await live.api("GET", "/v1/feedback", undefined, { key: operator })).status).toBe(403);
    const screenshot = await fetch(`${live.url}/v1/feedback/${sent.json.id}/screenshot`, { headers: { authorization: `Bearer ${live.key}` } });
    expect(screenshot.status).toBe(200);
    expect(screenshot.headers.get("content-type")).toBe("image/png");
    const png = Buffer.from(await screenshot.arrayBuffer());
    expect(png.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a");
    expect((await fetch(`${live.url}/v1/feedback/${sent.json.id}/screenshot`, { headers: { authorization: `Bearer ${operator}` } })).status).toBe(403);
    // Sealed at rest: no PNG anywhere in the data dir (database, WAL), in any encoding.
    for (const file of readdirSync(live.config.dataDir)) {
      const bytes = readRawFile(join(live.config.dataDir, file));
      expect(bytes.includes(Buffer.from("89504e470d0a1a0a", "hex")), file).toBe(false);
      expect(bytes.includes(Buffer.from("iVBORw0KGgo")), file).toBe(false);
    }
  }, 60_000);
});
