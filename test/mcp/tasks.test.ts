import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ActionFailure } from "../../src/domain/errors.js";
import { startSandbox } from "../../src/sandbox/index.js";
import { CLI, restClient, startServe } from "../helpers/processes.js";
import { ScriptedExecutor } from "../helpers/scripted-executor.js";
import { addAccount, emailCodeConnect, harness, modernEnvelope, modernRpc, serveMcpHttp, type Rpc } from "./support.js";
import { eventually } from "../helpers/wait.js";

// The tasks extension over 2026-07-28 HTTP (DESIGN §6): run_action and connect_account answer a
// task when the client declares the extension; the action is the task. Raw requests: the SDK's
// client refuses `resultType: "task"` on tools/call.
const MODERN = "2026-07-28";
const TASKS = "io.modelcontextprotocol/tasks";
const WITH_TASKS = { elicitation: { url: {} }, extensions: { [TASKS]: {} } };
const stops: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/** A connect that asks for an emailed code until it gets 123456; a post that succeeds; a send_message the platform refuses. */
function script(): ScriptedExecutor {
  return new ScriptedExecutor()
    .on("connect", emailCodeConnect)
    .on("post", async () => ({ post_id: "p1", url: "http://sandbox/p1" }))
    .on("lookup_person", async (context) => {
      // Two challenges in a row: an emailed code, then a texted one.
      await context.challenge({ kind: "email_code", message: "We emailed a code." });
      await context.challenge({ kind: "sms_code", message: "We texted a code." });
      return { handle: "dave", name: "Dave", headline: "", url: "http://sandbox/dave" };
    })
    .on("send_message", async () => {
      throw new ActionFailure("rate_limited", "You are doing that too often.");
    });
}

async function serve() {
  const h = await harness({ executor: script() });
  const { url } = await serveMcpHttp(h);
  const rpc = modernRpc(url, WITH_TASKS);
  const admin = (await h.engine.keys.authenticate(h.adminKey))!;
  return { h, url, rpc, admin };
}

/** tasks/get until `done` holds (polling, as a client would), or fails after `ms`. */
async function until(get: () => Promise<Rpc>, done: (task: any) => boolean, timeoutMs = 30_000): Promise<any> {
  let last: unknown;
  return eventually(
    async () => {
      const answer = await get();
      if (answer.error) throw new Error(`tasks/get failed: ${JSON.stringify(answer.error)}`);
      last = answer.result;
      return done(answer.result) && answer.result;
    },
    { what: "the task's status", timeoutMs, everyMs: 50 },
  ).catch((error: unknown) => {
    const cause = error instanceof Error && error.cause !== undefined ? ` (${String(error.cause instanceof Error ? `${error.cause.message} ${(error.cause as { code?: string }).code ?? ""}` : error.cause)})` : "";
    throw new Error(`${error instanceof Error ? error.message : String(error)}${cause}: the task is ${JSON.stringify(last)}`);
  });
}

const connectArgs = (accountId: string) => ({ account_id: accountId, type: "connect", params: {}, wait_seconds: 5 });

describe("the tasks extension over 2026-07-28 HTTP", () => {
  it("server/discover declares the extension, and tools/list keeps the task tools' output schemas", async () => {
    const { h, rpc } = await serve();
    const discovered = await rpc(h.adminKey, "server/discover", {});
    expect(discovered.result.capabilities.extensions).toEqual({ [TASKS]: {} });
    const { result } = await rpc(h.adminKey, "tools/list", {});
    for (const name of ["run_action", "connect_account"]) {
      expect(result.tools.find((tool: { name: string }) => tool.name === name).outputSchema).toMatchObject({ type: "object" });
    }
  });

  it("run_action is a task at once; tasks/get at input_required asks for the sign-in link; once the code is typed on the page it is completed with the action", async () => {
    const { h, rpc, admin } = await serve();
    const accountId = await addAccount(h);
    const started = Date.now();
    const created = await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: connectArgs(accountId) });
    // The call does not wait for the action (wait_seconds is for calls without tasks).
    expect(Date.now() - started).toBeLessThan(4_000);
    const task = created.result;
    expect(task).toMatchObject({ resultType: "task", status: expect.stringMatching(/^(working|input_required)$/), ttlMs: null, pollIntervalMs: 2000 });
    expect(task.taskId).toMatch(/^run_action\.act_/);
    expect(typeof task.statusMessage).toBe("string");
    expect(Date.parse(task.createdAt)).not.toBeNaN();
    expect(Date.parse(task.lastUpdatedAt)).not.toBeNaN();
    // It also carries run_action's own result (the action as it is now), valid against its output schema.
    expect(task.structuredContent).toMatchObject({ object: "action", type: "connect" });
    const actionId: string = task.structuredContent.id;

    const get = () => rpc(h.adminKey, "tasks/get", { taskId: task.taskId });
    const paused = await until(get, (current) => current.status === "input_required");
    const signInUrl = (await h.engine.present(await h.engine.getAction(admin, actionId), "mcp")).challenge!.sign_in_url;
    expect(paused.resultType).toBe("complete");
    expect(paused.statusMessage).toContain("We emailed a code to c***@example.com.");
    const requests = Object.entries(paused.inputRequests as Record<string, any>);
    expect(requests).toHaveLength(1);
    expect(requests[0]![1]).toMatchObject({ method: "elicitation/create", params: { mode: "url", url: signInUrl } });
    // The same request on every poll while the challenge is open (a client deduplicates by key).
    expect(Object.keys((await get()).result.inputRequests)).toEqual([requests[0]![0]]);
    expect(paused.result).toBeUndefined();

    // The person types the code on the page the link opens (its answer box calls the same engine method).
    await h.engine.answer(admin, actionId, "123456");
    const done = await until(get, (current) => current.status === "completed");
    expect(done.inputRequests).toBeUndefined();
    expect(done.result.structuredContent).toMatchObject({ id: actionId, status: "succeeded", cost: 1, result: { signed_in: true } });
    expect(done.result.content[0]).toMatchObject({ type: "text" });
    expect(done.result.content[0].text).toContain(`Action ${actionId}`);
  });

  it("each challenge has its own input key; a refused answer keeps its challenge, link and key, and says so", async () => {
    const { h, rpc, admin } = await serve();
    const task = (await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: { account_id: await addAccount(h), type: "lookup_person", params: { handle: "dave" } } })).result;
    const get = () => rpc(h.adminKey, "tasks/get", { taskId: task.taskId });
    const emailed = await until(get, (current) => current.status === "input_required");
    const [emailKey] = Object.keys(emailed.inputRequests);
    await h.engine.answer(admin, task.structuredContent.id, "111111");
    const texted = await until(get, (current) => current.status === "input_required" && current.statusMessage.includes("We texted a code."));
    const [smsKey] = Object.keys(texted.inputRequests);
    expect(smsKey).not.toBe(emailKey);
    await h.engine.answer(admin, task.structuredContent.id, "222222");
    expect((await until(get, (current) => current.status === "completed")).result.structuredContent).toMatchObject({ status: "succeeded", result: { handle: "dave" } });

    const connect = (await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: connectArgs(await addAccount(h, "erin")) })).result;
    const getConnect = () => rpc(h.adminKey, "tasks/get", { taskId: connect.taskId });
    const asked = await until(getConnect, (current) => current.status === "input_required");
    await h.engine.answer(admin, connect.structuredContent.id, "000000");
    const refused = await until(getConnect, (current) => current.status === "input_required" && current.statusMessage.includes("refused"));
    expect(Object.keys(refused.inputRequests)).toEqual(Object.keys(asked.inputRequests));
  });

  it("tasks/update: accept is acknowledged and changes nothing; decline cancels the action, free", async () => {
    const { h, rpc, admin } = await serve();
    const task = (await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: connectArgs(await addAccount(h)) })).result;
    const get = () => rpc(h.adminKey, "tasks/get", { taskId: task.taskId });
    const paused = await until(get, (current) => current.status === "input_required");
    const key = Object.keys(paused.inputRequests)[0]!;

    const accepted = await rpc(h.adminKey, "tasks/update", { taskId: task.taskId, inputResponses: { [key]: { action: "accept" } } });
    expect(accepted.result).toMatchObject({ resultType: "complete" });
    expect((await h.engine.getAction(admin, task.structuredContent.id)).status).toBe("needs_input");
    // A key the task never asked for is ignored.
    await rpc(h.adminKey, "tasks/update", { taskId: task.taskId, inputResponses: { sign_in_other: { action: "decline" } } });
    expect((await h.engine.getAction(admin, task.structuredContent.id)).status).toBe("needs_input");

    const declined = await rpc(h.adminKey, "tasks/update", { taskId: task.taskId, inputResponses: { [key]: { action: "decline" } } });
    expect(declined.result).toMatchObject({ resultType: "complete" });
    expect(await h.engine.getAction(admin, task.structuredContent.id)).toMatchObject({ status: "canceled", cost: 0 });
    const after = (await get()).result;
    expect(after).toMatchObject({ status: "cancelled" });
    expect(after.result).toBeUndefined();
    expect(after.inputRequests).toBeUndefined();
  });

  it("tasks/cancel cancels the action, free; on an ended task it is acknowledged and changes nothing", async () => {
    const { h, rpc, admin } = await serve();
    const task = (await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: connectArgs(await addAccount(h)) })).result;
    const canceled = await rpc(h.adminKey, "tasks/cancel", { taskId: task.taskId });
    expect(canceled.error).toBeUndefined();
    expect(canceled.result).toMatchObject({ resultType: "complete" });
    expect(await h.engine.getAction(admin, task.structuredContent.id)).toMatchObject({ status: "canceled", cost: 0 });
    expect((await rpc(h.adminKey, "tasks/get", { taskId: task.taskId })).result.status).toBe("cancelled");

    const again = await rpc(h.adminKey, "tasks/cancel", { taskId: task.taskId });
    expect(again.result).toMatchObject({ resultType: "complete" });
    expect((await h.engine.getAction(admin, task.structuredContent.id)).status).toBe("canceled");
  });

  it("a post is a task that completes with run_action's result; a failed action is a completed task whose result carries the failure", async () => {
    const { h, rpc } = await serve();
    const accountId = await addAccount(h);
    const posted = (await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: { account_id: accountId, type: "post", params: { text: "hello" } } })).result;
    expect(posted.resultType).toBe("task");
    const done = await until(() => rpc(h.adminKey, "tasks/get", { taskId: posted.taskId }), (current) => current.status === "completed");
    expect(done.result.isError).toBeUndefined();
    expect(done.result.structuredContent).toMatchObject({ status: "succeeded", cost: 2, result: { post_id: "p1" } });

    const sent = (await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: { account_id: accountId, type: "send_message", params: { to: "dave", text: "hi" } } })).result;
    const failed = await until(() => rpc(h.adminKey, "tasks/get", { taskId: sent.taskId }), (current) => current.status === "completed");
    expect(failed.statusMessage).toContain("rate_limited");
    expect(failed.result.structuredContent).toMatchObject({ status: "failed", error: { code: "rate_limited" } });
    expect(failed.result.content[0].text).toContain("rate_limited");
  });

  it("connect_account is a task whose result is {account, action}; without a password it runs nothing and answers a normal result", async () => {
    const { h, rpc, admin } = await serve();
    const connected = (await rpc(h.adminKey, "tools/call", { name: "connect_account", arguments: { platform: "sandbox", username: "carol", password: "pw" } })).result;
    expect(connected).toMatchObject({ resultType: "task", structuredContent: { account: { username: "carol" }, action: { type: "connect" } } });
    expect(connected.taskId).toMatch(/^connect_account\.act_/);
    const get = () => rpc(h.adminKey, "tasks/get", { taskId: connected.taskId });
    await until(get, (current) => current.status === "input_required");
    await h.engine.answer(admin, connected.structuredContent.action.id, "123456");
    const done = await until(get, (current) => current.status === "completed");
    expect(done.result.structuredContent).toMatchObject({ account: { id: connected.structuredContent.account.id }, action: { status: "succeeded" } });

    const linkOnly = (await rpc(h.adminKey, "tools/call", { name: "connect_account", arguments: { platform: "sandbox", username: "dave" } })).result;
    expect(linkOnly.resultType).toBe("complete");
    expect(linkOnly.taskId).toBeUndefined();
    expect(linkOnly.structuredContent).toMatchObject({ account: { username: "dave" }, sign_in_link: { url: expect.any(String) } });
  });

  it("another workspace's key, a key limited to other accounts, an unknown or malformed taskId: -32602, nothing changed", async () => {
    const { h, rpc, admin } = await serve();
    const accountId = await addAccount(h);
    const task = (await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: connectArgs(accountId) })).result;
    await until(() => rpc(h.adminKey, "tasks/get", { taskId: task.taskId }), (current) => current.status === "input_required");
    const elsewhere = (await h.engine.keys.issue({ workspaceName: "elsewhere", role: "admin" })).key;
    const limited = await h.key("operator", { accountIds: [await addAccount(h, "dave")] });
    const attempts: [string, string, Record<string, unknown>][] = [];
    for (const key of [elsewhere, limited]) {
      attempts.push([key, "tasks/get", { taskId: task.taskId }], [key, "tasks/cancel", { taskId: task.taskId }], [key, "tasks/update", { taskId: task.taskId, inputResponses: { any: { action: "decline" } } }]);
    }
    const unknown = task.taskId.slice(0, -4) + (task.taskId.endsWith("AAAA") ? "BBBB" : "AAAA");
    for (const taskId of [unknown, `connect_account.${task.structuredContent.id}x`, "not-a-task", task.structuredContent.id, `get_action.${task.structuredContent.id}`]) {
      attempts.push([h.adminKey, "tasks/get", { taskId }], [h.adminKey, "tasks/cancel", { taskId }]);
    }
    for (const [key, method, params] of attempts) {
      const answer = await rpc(key, method, params);
      expect(answer.result, `${method} ${JSON.stringify(params)}`).toBeUndefined();
      expect(answer.error!.code, `${method} ${JSON.stringify(params)}`).toBe(-32602);
    }
    // A taskId that is not a string is refused by the params schema, the same way.
    expect((await rpc(h.adminKey, "tasks/get", { taskId: 42 })).error!.code).toBe(-32602);
    expect((await h.engine.getAction(admin, task.structuredContent.id)).status).toBe("needs_input");
  });

  it("a read-only key reads a task but may not cancel it", async () => {
    const { h, rpc, admin } = await serve();
    const task = (await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: connectArgs(await addAccount(h)) })).result;
    const reader = await h.key("read_only");
    expect((await rpc(reader, "tasks/get", { taskId: task.taskId })).result.taskId).toBe(task.taskId);
    const refused = await rpc(reader, "tasks/cancel", { taskId: task.taskId });
    expect(refused.error).toMatchObject({ code: -32602, message: expect.stringContaining("forbidden") });
    expect((await h.engine.getAction(admin, task.structuredContent.id)).status).not.toBe("canceled");
  });

  it("a client that does not declare the extension gets a normal result, and its tasks/get is refused with -32021", async () => {
    const { h, rpc } = await serve();
    const plain = await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: { account_id: await addAccount(h), type: "post", params: { text: "hello" }, wait_seconds: 5 } }, {});
    expect(plain.result).toMatchObject({ resultType: "complete", structuredContent: { status: "succeeded" } });
    expect(plain.result.taskId).toBeUndefined();
    const taskId = `run_action.${plain.result.structuredContent.id}`;
    const refused = await rpc(h.adminKey, "tasks/get", { taskId }, {});
    expect(refused.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { [TASKS]: {} } } } });
  });

  it("the SDK's client reads and cancels a task with client.request (it sends Mcp-Name for tasks/*)", async () => {
    const { h, url, rpc, admin } = await serve();
    const task = (await rpc(h.adminKey, "tools/call", { name: "run_action", arguments: connectArgs(await addAccount(h)) })).result;
    const client = new Client({ name: "tasks-test", version: "1.0.0" }, { versionNegotiation: { mode: { pin: MODERN } }, capabilities: { extensions: { [TASKS]: {} } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${h.adminKey}` } } }));
    stops.push(() => client.close());
    const DetailedTask = z.looseObject({ taskId: z.string(), status: z.string() });
    const read = await client.request({ method: "tasks/get", params: { taskId: task.taskId } }, DetailedTask);
    expect(read).toMatchObject({ taskId: task.taskId, status: expect.stringMatching(/^(working|input_required)$/) });
    await client.request({ method: "tasks/cancel", params: { taskId: task.taskId } }, z.looseObject({}));
    expect((await h.engine.getAction(admin, task.structuredContent.id)).status).toBe("canceled");
  });
});

/** `action-service mcp` as a child process, spoken to in raw 2026-era JSON-RPC lines (a task is no result the SDK's client takes). */
function startStdio(dataDir: string, sandboxUrl: string) {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [CLI, "mcp"], {
    env: { ...process.env, ACTION_SERVICE_DATA_DIR: dataDir, ACTION_SERVICE_PORT: "0", SANDBOX_URL: sandboxUrl, ACTION_SERVICE_LOG_LEVEL: "error" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  stops.push(async () => {
    child.stdin.end();
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  });
  const waiting = new Map<number, (message: Rpc) => void>();
  let buffer = "";
  child.stdout.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
      const message = JSON.parse(buffer.slice(0, end)) as { id?: number } & Rpc;
      buffer = buffer.slice(end + 1);
      if (message.id !== undefined) waiting.get(message.id)?.({ ...message, status: 0 });
    }
  });
  let ids = 0;
  return (method: string, params: Record<string, unknown>): Promise<Rpc> =>
    new Promise((resolve) => {
      const id = ++ids;
      waiting.set(id, resolve);
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: modernEnvelope(WITH_TASKS) } })}\n`);
    });
}

describe("tasks across processes on one data dir", () => {
  it("a task made through serve (HTTP) or mcp (stdio) is read, updated, answered and cancelled through the other", { timeout: 120_000 }, async () => {
    const sandbox = await startSandbox({ port: 0 });
    stops.push(() => sandbox.close());
    const dataDir = mkdtempSync(join(tmpdir(), "action-service-tasks-"));
    stops.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const serveProcess = await startServe({ dataDir, sandboxUrl: sandbox.url, env: { ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "100000" } });
    stops.push(() => serveProcess.stop());
    const key = serveProcess.firstKey!;
    const rpc = modernRpc(`${serveProcess.url}/mcp`, WITH_TASKS);
    // A request serve did not answer says whether serve is still running, and what it last printed.
    const http = (method: string, params: Record<string, unknown>) =>
      rpc(key, method, params).catch((error: unknown) => {
        const state = serveProcess.child.exitCode === null && serveProcess.child.signalCode === null ? "still running" : `exited (${serveProcess.child.exitCode ?? serveProcess.child.signalCode})`;
        const cause = error instanceof Error && error.cause instanceof Error ? `${error.cause.message} ${(error.cause as { code?: string }).code ?? ""}` : "";
        throw new Error(`${method} to serve failed: ${error instanceof Error ? error.message : String(error)} (${cause}); serve ${state}; its output ends:\n${serveProcess.output().slice(-3_000)}`);
      });
    const stdio = startStdio(dataDir, sandbox.url);
    const rest = restClient(() => serveProcess.url, key);
    let users = 0;
    const sandboxAccount = async (): Promise<{ handle: string; accountId: string }> => {
      const handle = `t${process.pid.toString(36)}${Date.now().toString(36)}${++users}`.slice(0, 30);
      await fetch(`${sandbox.url}/_sandbox/users`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ handle, name: `Task ${handle}`, password: "sandbox-password", challenge: "email" }),
      });
      const account = await rest("POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password" });
      return { handle, accountId: account.json.id };
    };
    const connect = (accountId: string) => ({ name: "run_action", arguments: { account_id: accountId, type: "connect", params: {} } });
    const [declined, cancelled, answered] = await Promise.all([sandboxAccount(), sandboxAccount(), sandboxAccount()]);

    // Made through serve; its challenge is declined through mcp.
    const viaHttp = (await http("tools/call", connect(declined.accountId))).result;
    expect(viaHttp.resultType).toBe("task");
    const paused = await until(() => stdio("tasks/get", { taskId: viaHttp.taskId }), (task) => task.status === "input_required", 60_000);
    const action = (await rest("GET", `/v1/actions/${viaHttp.structuredContent.id}`)).json;
    const [inputKey, request] = Object.entries(paused.inputRequests as Record<string, any>)[0]!;
    // The same link (token), on the public URL of the process that answered (mcp's own port): its view reaches serve's page.
    const token = action.challenge.sign_in_url.split("/live/")[1];
    expect(request.params).toMatchObject({ mode: "url", url: expect.stringMatching(new RegExp(`/live/${token}$`)) });
    expect((await stdio("tasks/update", { taskId: viaHttp.taskId, inputResponses: { [inputKey]: { action: "decline" } } })).result).toMatchObject({ resultType: "complete" });
    expect((await http("tasks/get", { taskId: viaHttp.taskId })).result.status).toBe("cancelled");
    expect((await rest("GET", `/v1/actions/${action.id}`)).json).toMatchObject({ status: "canceled", cost: 0 });

    // Made through mcp; cancelled through serve.
    const viaStdio = (await stdio("tools/call", connect(cancelled.accountId))).result;
    expect(viaStdio.resultType).toBe("task");
    await until(() => http("tasks/get", { taskId: viaStdio.taskId }), (task) => task.status === "input_required", 60_000);
    expect((await http("tasks/cancel", { taskId: viaStdio.taskId })).result).toMatchObject({ resultType: "complete" });
    expect((await stdio("tasks/get", { taskId: viaStdio.taskId })).result.status).toBe("cancelled");
    expect((await rest("GET", `/v1/actions/${viaStdio.structuredContent.id}`)).json).toMatchObject({ status: "canceled", cost: 0 });

    // Made through mcp; the emailed code typed in (REST on serve, as the page does); completed as read through serve.
    const toAnswer = (await stdio("tools/call", connect(answered.accountId))).result;
    await until(() => http("tasks/get", { taskId: toAnswer.taskId }), (task) => task.status === "input_required", 60_000);
    const [mail] = (await (await fetch(`${sandbox.url}/_sandbox/outbox?to=${answered.handle}`)).json()) as { code: string }[];
    expect((await rest("POST", `/v1/actions/${toAnswer.structuredContent.id}/answer`, { answer: mail!.code })).status).toBe(202);
    const done = await until(() => http("tasks/get", { taskId: toAnswer.taskId }), (task) => task.status === "completed", 60_000);
    expect(done.result.structuredContent).toMatchObject({ id: toAnswer.structuredContent.id, status: "succeeded", result: { profile: { handle: answered.handle } } });
  });
});
