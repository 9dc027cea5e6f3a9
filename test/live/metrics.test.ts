import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { Scrape } from "../helpers/prometheus.js";

// GET /metrics on a real service (HTTP on 127.0.0.1, SQLite, real Chromium against the sandbox),
// read back through a Prometheus text parser as a scraper would.
const TOKEN = randomBytes(24).toString("hex");
let live: LiveService;

beforeAll(async () => {
  live = await startLiveService({ env: { ACTION_SERVICE_METRICS_TOKEN: TOKEN } });
});
afterAll(async () => {
  await live?.close();
});

async function get(path: string, authorization?: string): Promise<{ status: number; type: string | null; text: string }> {
  const response = await fetch(live.url + path, { headers: authorization ? { authorization } : {} });
  return { status: response.status, type: response.headers.get("content-type"), text: await response.text() };
}

async function scrape(): Promise<Scrape> {
  const response = await get("/metrics", `Bearer ${TOKEN}`);
  expect(response.status).toBe(200);
  return new Scrape(response.text);
}

describe("GET /metrics", () => {
  it("is 401 without a key or with a wrong one, 403 for a key that is not admin, 200 for an admin key and for the metrics token", async () => {
    const refused = [await get("/metrics"), await get("/metrics", `Bearer ${randomBytes(24).toString("hex")}`), await get("/metrics", `Bearer ${TOKEN}x`)];
    for (const response of refused) {
      expect(response.status).toBe(401);
      expect(JSON.parse(response.text)).toMatchObject({ error: { code: "unauthorized" } });
    }
    for (const role of ["operator", "read_only"] as const) {
      const { key } = await live.server.service.engine.keys.issue({ role });
      const forbidden = await get("/metrics", `Bearer ${key}`);
      expect(forbidden.status).toBe(403);
      expect(JSON.parse(forbidden.text)).toMatchObject({ error: { code: "forbidden", details: { role } } });
    }
    for (const authorization of [`Bearer ${live.key}`, `Bearer ${TOKEN}`]) {
      const allowed = await get("/metrics", authorization);
      expect(allowed.status).toBe(200);
      expect(allowed.type).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(new Scrape(allowed.text).family("action_service_actions_total")?.type).toBe("COUNTER");
    }
    // Where scrapers look for it, not under the API's prefix.
    expect((await get("/v1/metrics", `Bearer ${live.key}`)).status).toBe(404);
  });

  it("moves with real actions: status changes, run durations, a challenge answered by an agent, the queue's depth; no secret shows", async () => {
    const plain = await live.account(await live.user("none"));
    expect((await live.run(plain, "connect")).status).toBe("succeeded");

    const handle = await live.user("email");
    const emailed = await live.account(handle);
    const paused = await live.run(emailed, "connect");
    expect(paused).toMatchObject({ status: "needs_input", challenge: { kind: "email_code" } });
    // One action at a time per account: the post waits in the queue behind the paused sign-in.
    const queued = await live.api("POST", "/v1/actions", { account_id: emailed, type: "post", params: { text: `metrics ${Date.now()}` } });
    expect(queued.json.status).toBe("queued");

    const waiting = await scrape();
    expect(waiting.value("action_service_queued_actions")).toBe(1);
    expect(waiting.value("action_service_paused_pages")).toBe(1);
    expect(waiting.value("action_service_challenges_total", { kind: "email_code" })).toBe(1);
    expect(waiting.value("action_service_browser_contexts", { endpoint: "local" })).toBe(2);
    expect(waiting.value("action_service_browser_pages", { endpoint: "local" })).toBeGreaterThanOrEqual(1);

    const code = await live.latestCode(handle);
    expect((await live.api("POST", `/v1/actions/${paused.id}/answer`, { answer: code })).status).toBeLessThan(300);
    expect((await live.finished(paused.id)).status).toBe("succeeded");
    expect((await live.finished(queued.json.id)).status).toBe("succeeded");

    const done = await scrape();
    expect(done.value("action_service_challenge_answers_total", { kind: "email_code", answered_by: "agent" })).toBe(1);
    expect(done.value("action_service_actions_total", { platform: "sandbox", type: "connect", status: "succeeded" })).toBe(2);
    expect(done.value("action_service_actions_total", { platform: "sandbox", type: "post", status: "succeeded" })).toBe(1);
    expect(done.value("action_service_actions_total", { status: "needs_input" })).toBe(1);
    const runs = done.histogram("action_service_action_run_seconds", { type: "connect", status: "succeeded" });
    expect(runs.count).toBe(2);
    expect(runs.sum).toBeGreaterThan(0);
    expect(done.histogram("action_service_action_wait_seconds").count).toBe(3);
    expect(done.value("action_service_queued_actions")).toBe(0);
    expect(done.value("action_service_paused_pages")).toBe(0);
    expect(done.family("action_service_webhook_pending_deliveries")?.metrics[0]?.value).toBe("0");
    expect(done.family("action_service_store_retried_transactions_total")?.metrics[0]?.value).toBe("0");
    const coordinators = new Set(done.lines().map((line) => line.labels.coordinator));
    expect([...coordinators]).toEqual([live.url]);

    for (const secret of [live.key, TOKEN, "sandbox-password", code]) expect(done.text).not.toContain(secret);
  });
});
