import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { InMemoryTransport } from "@modelcontextprotocol/server";
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/engine/logger.js";
import { runStdioServer } from "../../src/mcp/stdio.js";
import { TOOLS } from "../../src/mcp/tools/index.js";
import { SCRIPTED_PLATFORM, ScriptedExecutor, eventually } from "../helpers/scripted-executor.js";
import { addAccount, emailCodeConnect, harness, modernRpc, serveMcpHttp } from "./support.js";
import type { Harness } from "../helpers/harness.js";
import type { Principal } from "../../src/domain/keys.js";

// The 2026-07-28 revision (DESIGN §6): stateless, `server/discover`, a challenge as `input_required`
// with a URL-mode elicitation of its sign_in_url and a sealed requestState; one tool registry with
// the 2025 era (whose tests are the other files here, through the 1.x client).
const MODERN = "2026-07-28";
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/** A connect that asks for an emailed code until it gets 123456; a post that succeeds. */
function script(): ScriptedExecutor {
  return new ScriptedExecutor()
    .on("connect", emailCodeConnect)
    .on("post", async () => ({ post_id: "p1", url: "http://sandbox/p1" }))
    .on("browser_steps", async () => ({ extracted: {}, steps: [] }));
}

async function serve(executor: ScriptedExecutor = script()) {
  // The scripted sandbox with browser_steps too, as every real platform has it (save_routine is saved from one).
  const h = await harness({ executor, engine: { platforms: [{ ...SCRIPTED_PLATFORM, actions: [...SCRIPTED_PLATFORM.actions, "browser_steps"] }] } });
  const { url } = await serveMcpHttp(h);
  /** One raw 2026-era request, declaring URL-mode elicitation unless told otherwise. */
  const rpc = modernRpc(url, { elicitation: { url: {} } });
  const modernClient = async (key: string, options: { elicitation?: boolean; onUrl?: (url: string) => Promise<"accept" | "decline"> } = {}) => {
    const client = new Client(
      { name: "modern-test", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: MODERN } }, capabilities: options.elicitation ? { elicitation: { url: {} } } : {} },
    );
    if (options.onUrl) {
      const onUrl = options.onUrl;
      client.setRequestHandler("elicitation/create", async (request) => ({ action: await onUrl((request.params as { url: string }).url) }));
    }
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    stops.push(() => client.close());
    return client;
  };
  return { h, url, rpc, modernClient };
}

const admin = async (h: Harness): Promise<Principal> => (await h.engine.keys.authenticate(h.adminKey))!;

describe("MCP 2026-07-28 over HTTP", () => {
  it("a client pinned to 2026-07-28 negotiates the modern era, lists every tool and runs a post", async () => {
    const { h, modernClient } = await serve();
    const client = await modernClient(h.adminKey);
    expect(client.getProtocolEra()).toBe("modern");
    const tools = await client.listTools();
    expect(tools.tools.map((tool) => tool.name).sort()).toEqual(TOOLS.map((tool) => tool.name).sort());
    const posted = await client.callTool({ name: "run_action", arguments: { account_id: await addAccount(h), type: "post", params: { text: "hello" }, wait_seconds: 5 } });
    expect(posted.isError).toBeFalsy();
    expect(posted.structuredContent).toMatchObject({ status: "succeeded", result: { post_id: "p1" } });
  });

  it("every tool answers a client pinned to 2026-07-28, with its structured result", async () => {
    const { h, modernClient } = await serve();
    const client = await modernClient(h.adminKey);
    const call = async (name: string, args: Record<string, unknown>) => {
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError, `${name}: ${JSON.stringify(result.content)}`).toBeFalsy();
      return result.structuredContent as any;
    };
    const called = new Set<string>();
    const tool = async (name: string, args: Record<string, unknown> = {}) => (called.add(name), call(name, args));
    expect((await tool("list_platforms")).data.map((platform: { name: string }) => platform.name)).toContain("sandbox");
    expect(await tool("get_credits")).toEqual({ balance: expect.any(Number) });
    const linked = await tool("connect_account", { platform: "sandbox", username: "nopass" });
    expect(linked.sign_in_link.url).toMatch(/\/live\//);
    const accountId = linked.account.id;
    expect((await tool("update_account", { account_id: accountId, password: "pw" })).has_password).toBe(true);
    expect((await tool("create_sign_in_link", { account_id: accountId })).url).toMatch(/\/live\//);
    expect((await tool("list_accounts")).data.map((account: { id: string }) => account.id)).toContain(accountId);
    const posted = await tool("run_action", { account_id: accountId, type: "post", params: { text: "every tool" }, wait_seconds: 5 });
    expect(posted.status).toBe("succeeded");
    expect((await tool("get_action", { action_id: posted.id, wait_seconds: 0 })).id).toBe(posted.id);
    expect((await tool("list_actions", {})).data.map((action: { id: string }) => action.id)).toContain(posted.id);
    const paused = await call("run_action", { account_id: await addAccount(h), type: "connect", params: {}, wait_seconds: 5 });
    expect((await tool("answer_challenge", { action_id: paused.id, answer: "000000", wait_seconds: 5 })).status).toBe("needs_input");
    expect((await tool("cancel_action", { action_id: paused.id })).status).toBe("canceled");
    expect(await tool("top_up_credits", { credits: 10 })).toMatchObject({ balance: expect.any(Number) });
    expect(await tool("send_feedback", { message: "works in the new era", action_id: posted.id })).toMatchObject({ id: expect.any(String) });
    expect(await tool("forward_message", { account_id: accountId, channel: "sms", text: "Your code is 123456" })).toMatchObject({ object: "message", channel: "sms" });
    // A check needs a session to check: the scripted platform signs nobody in, so the account is marked connected here.
    await h.store.accounts.update(accountId, { status: "connected" }, new Date().toISOString());
    expect(await tool("check_account", { account_id: accountId })).toMatchObject({ id: accountId, status: "connected" });
    // Routines: saved from a browser_steps action that succeeded (its steps name targets by role), listed, deleted.
    const stepped = await tool("run_action", { account_id: accountId, type: "browser_steps", params: { steps: [{ goto: "/feed" }, { click: { role: "button", name: "Post", exact: true } }] }, wait_seconds: 5 });
    expect(stepped.status, JSON.stringify(stepped.error)).toBe("succeeded");
    expect(await tool("save_routine", { platform: "sandbox", name: "press_post", from_action_id: stepped.id })).toMatchObject({ name: "press_post", version: 1 });
    expect(JSON.stringify(await tool("list_routines", { platform: "sandbox" }))).toContain("press_post");
    await tool("delete_routine", { name: "press_post" });
    expect(JSON.stringify(await tool("list_routines", {}))).not.toContain("press_post");
    expect(await tool("remove_account", { account_id: accountId })).toEqual({ removed: true, account_id: accountId });
    expect([...called].sort()).toEqual(TOOLS.map((entry) => entry.name).sort());
  });

  it("a challenge is input_required: a URL elicitation of its sign_in_url and a sealed requestState; the retry returns succeeded once the code is answered on the page", async () => {
    const { h, rpc } = await serve();
    const accountId = await addAccount(h);
    const first = await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: { account_id: accountId, type: "connect", params: {}, wait_seconds: 5 } });
    expect(first.result.resultType).toBe("input_required");
    const [key, request] = Object.entries(first.result.inputRequests as Record<string, any>)[0]!;
    const action = (await h.engine.listActions(await admin(h), { limit: 1 })).data[0]!;
    const signInUrl = (await h.engine.present(action, "mcp")).challenge!.sign_in_url;
    expect(request).toMatchObject({ method: "elicitation/create", params: { mode: "url", url: signInUrl } });
    expect(request.params.message).toContain("We emailed a code to c***@example.com.");
    // Sealed: the state names nothing a client could read or change.
    const state: string = first.result.requestState;
    expect(state).not.toContain(action.id);
    expect(Buffer.from(state, "base64url").toString("latin1")).not.toContain(action.id);

    // The person types the code on the page the link opens (its answer box goes through the same engine call).
    await h.engine.answer(await admin(h), action.id, "123456");
    const retried = await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: { account_id: accountId, type: "connect", params: {}, wait_seconds: 5 }, inputResponses: { [key]: { action: "accept" } }, requestState: state });
    expect(retried.result.resultType).toBe("complete");
    expect(retried.result.structuredContent).toMatchObject({ id: action.id, status: "succeeded", cost: 1 });
    // One action: the retry did not start a second connect.
    expect((await h.engine.listActions(await admin(h), { limit: 50 })).data).toHaveLength(1);
  });

  it("a tampered, foreign or expired requestState is refused before the tool runs (-32602), a mismatched one is invalid_request; nothing changes", async () => {
    const { h, rpc } = await serve();
    const accountId = await addAccount(h);
    const args = { account_id: accountId, type: "connect", params: {} };
    const first = await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: args });
    const state: string = first.result.requestState;
    const key = Object.keys(first.result.inputRequests)[0]!;
    const retry = (bearer: string, requestState: string, name = "run_action", argumentsGiven: Record<string, unknown> = args) =>
      rpc(bearer, "tools/call", { name, arguments: argumentsGiven, inputResponses: { [key]: { action: "decline" } }, requestState });
    const tampered = state.slice(0, -2) + (state.endsWith("AA") ? "BB" : "AA");
    const other = (await h.engine.keys.issue({ workspaceName: "elsewhere", role: "admin" })).key;
    // Not ours, changed, another key's or expired: refused before the tool runs, as a JSON-RPC error.
    const refusals = [await retry(h.adminKey, tampered), await retry(other, state)];
    for (const refusal of refusals) {
      expect(refusal.error?.code).toBe(-32602);
      expect(refusal.error?.message).toBe("Invalid or expired requestState");
    }
    // Ours, for another call: the tool says so (invalid_request).
    const mismatched = [
      await retry(h.adminKey, state, "get_action", { action_id: (await h.engine.listActions(await admin(h), { limit: 50 })).data[0]!.id }),
      await retry(h.adminKey, state, "run_action", { ...args, params: { other: true } }),
    ];
    for (const refusal of mismatched) {
      expect(refusal.result.isError).toBe(true);
      expect(refusal.result.content[0].text).toMatch(/^invalid_request: The requestState was made for another tool call/);
    }
    h.clock.advance(11 * 60 * 1000);
    const expired = await retry(h.adminKey, state);
    expect(expired.error?.message).toBe("Invalid or expired requestState");
    // A decline in any of them would have canceled the action: it is as it was (or expired by the clock, never canceled).
    const action = (await h.engine.listActions(await admin(h), { limit: 50 })).data[0]!;
    expect(action.status).not.toBe("canceled");
  });

  it("declining the sign-in cancels the action, free", async () => {
    const { h, rpc } = await serve();
    const args = { account_id: await addAccount(h), type: "connect", params: {} };
    const first = await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: args });
    const key = Object.keys(first.result.inputRequests)[0]!;
    const declined = await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: args, inputResponses: { [key]: { action: "decline" } }, requestState: first.result.requestState });
    expect(declined.result.structuredContent).toMatchObject({ status: "canceled", cost: 0 });
  });

  it("the SDK's client answers input_required through its elicitation handler and gets the outcome", async () => {
    const { h, modernClient } = await serve();
    const accountId = await addAccount(h);
    const shown: string[] = [];
    const client = await modernClient(h.adminKey, {
      elicitation: true,
      onUrl: async (url) => {
        shown.push(url);
        // The person opens the link and types the code there.
        const action = (await h.engine.listActions(await admin(h), { limit: 1 })).data[0]!;
        await h.engine.answer(await admin(h), action.id, "123456");
        return "accept";
      },
    });
    const result = await client.callTool({ name: "connect_account", arguments: { platform: "sandbox", username: "carol", password: "pw", wait_seconds: 5 } });
    expect(shown).toHaveLength(1);
    expect(shown[0]).toMatch(/^http:\/\/127\.0\.0\.1:8787\/live\//);
    expect(result.structuredContent).toMatchObject({ account: { id: accountId }, action: { status: "succeeded" } });
  });

  it("a client without elicitation gets the challenge in the result and answers it with answer_challenge", async () => {
    const { h, modernClient } = await serve();
    const client = await modernClient(h.adminKey);
    const paused = await client.callTool({ name: "run_action", arguments: { account_id: await addAccount(h), type: "connect", params: {}, wait_seconds: 5 } });
    const action = paused.structuredContent as { id: string; status: string; challenge: { kind: string } };
    expect(action).toMatchObject({ status: "needs_input", challenge: { kind: "email_code" } });
    const answered = await client.callTool({ name: "answer_challenge", arguments: { action_id: action.id, answer: "123456", wait_seconds: 5 } });
    expect(answered.structuredContent).toMatchObject({ status: "succeeded" });
  });

  it("subscriptions/listen carries the action's updates to its key, and only its key's", async () => {
    const { h, modernClient } = await serve();
    const client = await modernClient(h.adminKey);
    const paused = await client.callTool({ name: "run_action", arguments: { account_id: await addAccount(h), type: "connect", params: {}, wait_seconds: 5 } });
    const id = (paused.structuredContent as { id: string }).id;
    const uri = `action://${id}`;
    const updates: string[] = [];
    client.setNotificationHandler("notifications/resources/updated", (notification) => void updates.push(notification.params.uri));
    const subscription = await client.listen({ resourceSubscriptions: [uri] });
    expect(subscription.honoredFilter.resourceSubscriptions).toEqual([uri]);
    // Another workspace's key listening to the same URI hears nothing of it.
    const stranger = await modernClient((await h.engine.keys.issue({ workspaceName: "elsewhere", role: "admin" })).key);
    const overheard: string[] = [];
    stranger.setNotificationHandler("notifications/resources/updated", (notification) => void overheard.push(notification.params.uri));
    const eavesdrop = await stranger.listen({ resourceSubscriptions: [uri] });
    await h.engine.answer(await admin(h), id, "123456");
    for (let i = 0; i < 100 && updates.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(updates.length).toBeGreaterThanOrEqual(1);
    expect(new Set(updates)).toEqual(new Set([uri]));
    expect(overheard).toEqual([]);
    await subscription.close();
    await eavesdrop.close();
  });

  it("a closed request stops the wait, never the action", async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const { h, modernClient } = await serve(new ScriptedExecutor().on("post", async () => (await gate, { post_id: "p1" })));
    // A failure below must not leave the action held open (the harness waits for it when it closes).
    try {
      const client = await modernClient(h.adminKey);
      const listeners = h.engine.core.lifecycle.events.listenerCount("change");
      const controller = new AbortController();
      const held = client.callTool({ name: "run_action", arguments: { account_id: await addAccount(h), type: "post", params: { text: "held" }, wait_seconds: 50 } }, { signal: controller.signal });
      void held.catch(() => undefined);
      // The server is waiting on the action for the caller…
      for (let i = 0; i < 2_000 && h.engine.core.lifecycle.events.listenerCount("change") <= listeners; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(h.engine.core.lifecycle.events.listenerCount("change")).toBeGreaterThan(listeners);
      const id = (await h.engine.listActions(await admin(h), { limit: 1 })).data[0]!.id;
      // (and the action has been claimed: on a busy machine it may still be queued when the wait begins)
      await eventually(async () => (await h.engine.getAction(await admin(h), id)).status === "running", 30_000);
      controller.abort(new Error("user gave up"));
      await expect(held).rejects.toThrow(/user gave up/);
      // …and lets go once the request is closed, well before its 50 s; the action runs on and ends.
      for (let i = 0; i < 2_000 && h.engine.core.lifecycle.events.listenerCount("change") > listeners; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(h.engine.core.lifecycle.events.listenerCount("change")).toBe(listeners);
      expect((await h.engine.getAction(await admin(h), id)).status).toBe("running");
      open();
      expect((await h.engine.waitFor(id, 30)).status).toBe("succeeded");
    } finally {
      open();
    }
  });
});

describe("MCP 2026-07-28 over stdio", () => {
  it("the stdio server answers server/discover and serves the same tools and a post", async () => {
    const h = await harness({ executor: script() });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const stdio = await runStdioServer({ engine: h.engine, principal: await admin(h), logger: silentLogger, transport: serverSide });
    stops.push(() => stdio.close());
    const client = new Client({ name: "modern-stdio-test", version: "1.0.0" }, { versionNegotiation: { mode: { pin: MODERN } } });
    await client.connect(clientSide);
    stops.push(() => client.close());
    expect(client.getProtocolEra()).toBe("modern");
    expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(TOOLS.map((tool) => tool.name).sort());
    const posted = await client.callTool({ name: "run_action", arguments: { account_id: await addAccount(h), type: "post", params: { text: "hello" }, wait_seconds: 5 } });
    expect(posted.structuredContent).toMatchObject({ status: "succeeded" });
  });
});
