import { ElicitationCompleteNotificationSchema, ElicitRequestSchema, ResourceUpdatedNotificationSchema, type ElicitRequestURLParams, type Progress } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import type { Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually } from "../helpers/scripted-executor.js";
import { addAccount, call, connect, harness } from "./support.js";

/** A post that runs until the test opens the gate, then asks for an SMS code, then succeeds. */
function gatedScript() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const executor = new ScriptedExecutor().on("post", async (context) => {
    // Stopping the engine aborts the run; the script must let go then.
    await new Promise<void>((resolve, reject) => {
      void gate.then(resolve);
      context.signal.addEventListener("abort", () => reject(context.signal.reason), { once: true });
    });
    await context.challenge({ kind: "sms_code", message: "We texted you a code." });
    return { post_id: "p1" };
  });
  return { executor, open };
}

async function runningPost(h: Harness, client: Awaited<ReturnType<typeof connect>>): Promise<string> {
  const started = await call(client, "run_action", { account_id: await addAccount(h), type: "post", params: { text: "hello" }, wait_seconds: 0 });
  await eventually(async () => (await h.store.actions.get(started.data.id))?.status === "running");
  return started.data.id;
}

describe("MCP notifications", () => {
  it("offers a challenge as a URL elicitation with sign_in_url, and completes it once the challenge is resolved", async () => {
    const { executor, open } = gatedScript();
    open();
    const h = await harness({ executor });
    const offered: ElicitRequestURLParams[] = [];
    const completed: string[] = [];
    const client = await connect(h, {
      capabilities: { elicitation: { url: {} } },
      setup: (c) => {
        c.setRequestHandler(ElicitRequestSchema, (request) => {
          if (request.params.mode === "url") offered.push(request.params);
          // A decline must not change the tool result: it still carries the challenge.
          return { action: "decline" };
        });
        c.setNotificationHandler(ElicitationCompleteNotificationSchema, (notification) => void completed.push(notification.params.elicitationId));
      },
    });
    const paused = await call(client, "run_action", { account_id: await addAccount(h), type: "post", params: { text: "hi" }, wait_seconds: 5 });
    expect(paused.isError).toBeFalsy();
    expect(paused.data.status).toBe("needs_input");
    await eventually(() => offered.length === 1);
    expect(offered[0]).toMatchObject({ mode: "url", url: paused.data.challenge.sign_in_url });
    expect(offered[0]!.message).toContain("We texted you a code.");
    // Reading the same challenge again does not offer it twice.
    await call(client, "get_action", { action_id: paused.data.id, wait_seconds: 0 });
    expect(completed).toEqual([]);
    const done = await call(client, "answer_challenge", { action_id: paused.data.id, answer: "4242", wait_seconds: 5 });
    expect(done.data.status).toBe("succeeded");
    await eventually(() => completed.length === 1);
    expect(completed).toEqual([offered[0]!.elicitationId]);
    expect(offered).toHaveLength(1);
  });

  it("sends notifications/resources/updated for a subscribed action on every status change until it ends", async () => {
    const { executor, open } = gatedScript();
    const h = await harness({ executor });
    const updates: string[] = [];
    const client = await connect(h, {
      setup: (c) => c.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => void updates.push(notification.params.uri)),
    });
    const id = await runningPost(h, client);
    const uri = `action://${id}`;
    const templates = await client.listResourceTemplates();
    expect(templates.resourceTemplates.map((template) => template.uriTemplate)).toContain("action://{id}");
    expect((await client.listResources()).resources.map((resource) => resource.uri)).toContain(uri);
    await client.subscribeResource({ uri });

    open();
    await eventually(async () => (await h.store.actions.get(id))?.status === "needs_input");
    await eventually(() => updates.length === 1);
    await call(client, "answer_challenge", { action_id: id, answer: "4242", wait_seconds: 5 });
    // needs_input, running again, succeeded.
    await eventually(() => updates.length === 3);
    expect(updates).toEqual([uri, uri, uri]);
    const read = await client.readResource({ uri });
    expect(read.contents[0]).toMatchObject({ uri, mimeType: "application/json" });
    const content = read.contents[0]!;
    expect(JSON.parse("text" in content ? content.text : "")).toMatchObject({ id, status: "succeeded", result: { post_id: "p1" } });
    // "Resource not found" as the SDK sends it in both eras (-32602 with the uri, as the 2026-07-28
    // revision says), and our message once (not "MCP error -32602: MCP error -32602: …").
    const missing = await client.readResource({ uri: "action://act_nope" }).catch((error: unknown) => error as { code: number; message: string });
    expect(missing.code).toBe(-32602);
    expect(missing.message).toMatch(/^MCP error -32602: not_found: /);
  });

  it("reports each status change as progress while waiting, when the client sent a progress token", async () => {
    const { executor, open } = gatedScript();
    const h = await harness({ executor });
    const client = await connect(h);
    const id = await runningPost(h, client);
    const progress: Progress[] = [];
    const waiting = client.callTool({ name: "get_action", arguments: { action_id: id, wait_seconds: 10 } }, undefined, { onprogress: (p) => progress.push(p) });
    await eventually(() => progress.length === 1);
    open();
    const result = await waiting;
    expect((result.structuredContent as { status: string }).status).toBe("needs_input");
    // In plain words, with what the challenge waits for.
    expect(progress.map((p) => p.message)).toEqual(["working in the browser", "waiting for the texted code"]);
    expect(progress.map((p) => p.progress)).toEqual([0, 1]);
  });

  it("a canceled tool call stops waiting but not the action", async () => {
    const { executor } = gatedScript();
    const h = await harness({ executor });
    const client = await connect(h);
    const id = await runningPost(h, client);
    const listeners = h.engine.core.lifecycle.events.listenerCount("change");
    const controller = new AbortController();
    const waiting = client.callTool({ name: "get_action", arguments: { action_id: id, wait_seconds: 50 } }, undefined, { signal: controller.signal });
    await eventually(() => h.engine.core.lifecycle.events.listenerCount("change") > listeners);
    controller.abort(new Error("user gave up"));
    await expect(waiting).rejects.toThrow(/user gave up/);
    // The server-side wait has let go of its listener, well before the 50 s are up.
    await eventually(() => h.engine.core.lifecycle.events.listenerCount("change") === listeners);
    expect((await h.store.actions.get(id))?.status).toBe("running");
  });
});
