import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually, sleep } from "../helpers/scripted-executor.js";

// What a coordinator that stops does with the actions it holds (DESIGN §11), on the real engine
// and store (SQLite, or PostgreSQL under test:postgres), the platform scripted.
let h: Harness | undefined;
afterEach(async () => {
  await h?.destroy();
  h = undefined;
});

async function account(harness: Harness, username: string): Promise<string> {
  return (await harness.request("POST", "/v1/accounts", { body: { platform: "sandbox", username, password: "pw-123456" } })).json.id;
}

describe("a coordinator that stops", () => {
  it("puts an action back in the queue before its commit point, lets one past it finish within the grace, and fails one that does not, saying the platform may have done it", async () => {
    const executor = new ScriptedExecutor()
      .on("connect", async (context) => ({ code: await context.challenge({ kind: "email_code", message: "Enter the code we sent." }) }))
      .on("post", async (context) => {
        await context.commit();
        // "quick" finishes within the grace; any other never does (until the run is aborted).
        await sleep((context.action.params as { text: string }).text === "quick" ? 300 : 3_600_000, context.signal);
        return { post_id: "p1" };
      });
    h = await createHarness({ executor, engine: { runner: { stopGraceMs: 1_000 } } });
    const harness = h;
    const create = async (accountId: string, type: string, params: Record<string, unknown> = {}) =>
      (await harness.request("POST", "/v1/actions", { body: { account_id: accountId, type, params } })).json.id as string;
    const paused = await create(await account(h, "alice"), "connect");
    const quick = await create(await account(h, "bob"), "post", { text: "quick" });
    const stuck = await create(await account(h, "carol"), "post", { text: "stuck" });
    await eventually(async () => {
      const [a, b, c] = await Promise.all([paused, quick, stuck].map((id) => harness.store.actions.get(id)));
      return a?.status === "needs_input" && b?.committed_at !== undefined && c?.committed_at !== undefined;
    });

    await h.engine.stop();
    expect(await h.store.actions.get(paused)).toMatchObject({ status: "queued" });
    expect(await h.store.actions.get(quick)).toMatchObject({ status: "succeeded" });
    const failed = await h.store.actions.get(stuck);
    expect(failed).toMatchObject({ status: "failed", error_code: "browser_error" });
    expect(failed!.error_message).toMatch(/^Interrupted: the service stopped while the action was running\. It stopped after the driver had begun the step that cannot be undone/);
  });

  it("does not wait past the grace for a run whose driver does not stop when told to, and says so in the log", async () => {
    // A driver that hears no abort: its step never ends.
    const executor = new ScriptedExecutor().on("post", () => new Promise(() => undefined));
    const lines: { msg: string; action_id?: string }[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    h = await createHarness({ executor, engine: { runner: { stopGraceMs: 300 }, logger } });
    const harness = h;
    const id = (await h.request("POST", "/v1/actions", { body: { account_id: await account(h, "dave"), type: "post", params: { text: "deaf" } } })).json.id as string;
    await eventually(async () => (await harness.store.actions.get(id))?.status === "running");

    const stopped = await Promise.race([h.engine.stop().then(() => "stopped"), sleep(10_000).then(() => "still stopping")]);
    expect(stopped).toBe("stopped");
    // Before its commit point: back in the queue for the next start, as any run handed back.
    expect(await h.store.actions.get(id)).toMatchObject({ status: "queued" });
    expect(lines).toContainEqual(expect.objectContaining({ action_id: id, msg: "the action's run did not stop when told to; the service stopped without waiting for it" }));
  });
});
