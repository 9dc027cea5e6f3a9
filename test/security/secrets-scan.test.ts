import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { Page } from "playwright";
import { pino } from "pino";
import nodemailer from "nodemailer";
import { Webhook } from "standardwebhooks";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REDACT_PATHS, type Logger } from "../../src/engine/logger.js";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { call as callTool } from "../helpers/mcp.js";
import {
  LIVE_TOKEN,
  Recorder,
  describeFinding,
  exchangeRemainder,
  elicitationRemainder,
  needlesOf,
  randomBase32,
  randomSecret,
  readTree,
  resourceRemainder,
  scanBytes,
  scanText,
  secretRemainder,
  tokensIn,
  toolResultRemainder,
  type DataFile,
  type Finding,
  type Secret,
  type SecretKind,
  type TokenOwner,
  withoutInboxes,
} from "./secrets-support.js";
import { eventually } from "../helpers/wait.js";

// A full run of the real service (real Chromium, real sandbox, real HTTP, REST + MCP + live
// links, every sign-in challenge kind, idempotent requests, a webhook endpoint receiving every
// event, the event stream, feedback) with its log captured at debug; then a scan of everything
// it left behind, said or sent — the data dir byte for byte (the SQLite -wal and -shm files
// included), the log, every HTTP answer and header, every MCP result, every webhook delivery —
// for every secret it was given or handed out (DESIGN §4, §5, §8, §10, §13).

let live: LiveService;
let client: Client | undefined;
let logger: Logger;
let logDir: string;
let logFile: string;
let dataDir: string;
let operatorKey: string;
/** The webhook endpoint every event of the run is sent to: a server of this test's own, on loopback. */
let receiver: Server;
let receiverUrl: string;
let webhookId: string | undefined;
/** Its signing secret, as the 201 that created it handed it out (once). */
let webhookSecret: string | undefined;
/** The deliveries the endpoint got that a Standard Webhooks check with the secret refused. */
const unverified: string[] = [];

const rec = new Recorder(() => live.url);
const secrets: Secret[] = [];
const accountIds: string[] = [];
/** A part of the run that did not go as the design says (asserted on its own, so the scans still run). */
const runProblems: string[] = [];
const challengeKinds = new Set<string>();
/** Every live token seen, and the service's own word on what it opens (read while the service runs). */
const owners = new Map<string, TokenOwner>();
let dataTree: DataFile[] = [];

const addSecret = (kind: SecretKind, label: string, value: string, raw?: Buffer): void => {
  if (!secrets.some((secret) => secret.value === value)) secrets.push({ kind, label, value, ...(raw ? { raw } : {}), ...(/^\d+$/.test(value) ? { digits: true } : {}) });
};
const secretsOf = (...kinds: SecretKind[]): Secret[] => secrets.filter((secret) => kinds.includes(secret.kind));
const owner = (token: string): TokenOwner => owners.get(token);

// ---------------------------------------------------------------- driving the service

type Api = { status: number; json: any; headers: Headers };
const api = (method: string, path: string, body?: unknown, options: { key?: string; headers?: Record<string, string> } = {}): Promise<Api> =>
  rec.api(method, path, body, { key: options.key ?? live.key, ...(options.headers ? { headers: options.headers } : {}) });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function check(condition: boolean, problem: string): void {
  if (!condition) throw new Error(problem);
}

/** Until the action is needs_input or ended. */
async function settled(actionId: string, key?: string): Promise<any> {
  const deadline = Date.now() + 45_000;
  for (;;) {
    const response = await api("GET", `/v1/actions/${actionId}?wait=20`, undefined, { key });
    check(response.status === 200 || response.status === 202, `GET ${actionId}: ${response.status} ${JSON.stringify(response.json)}`);
    if (response.json.status !== "queued" && response.json.status !== "running") return noteChallenge(response.json);
    check(Date.now() < deadline, `action ${actionId} still ${response.json.status}`);
  }
}

/** Until the action has ended, through any pause. */
async function finished(actionId: string, key?: string): Promise<any> {
  const deadline = Date.now() + 45_000;
  for (;;) {
    const response = await api("GET", `/v1/actions/${actionId}?wait=5`, undefined, { key });
    if (["succeeded", "failed", "canceled"].includes(response.json?.status)) return response.json;
    check(Date.now() < deadline, `action ${actionId} still ${response.json?.status}`);
    if (response.json?.status === "needs_input") await sleep(250);
  }
}

function noteChallenge(action: any): any {
  if (action?.challenge?.kind) challengeKinds.add(action.challenge.kind);
  return action;
}

async function run(accountId: string, type: string, params: Record<string, unknown> = {}, options: { key?: string; headers?: Record<string, string> } = {}): Promise<any> {
  const created = await api("POST", "/v1/actions?wait=20", { account_id: accountId, type, params }, options);
  check(created.status === 200 || created.status === 202, `POST /v1/actions: ${created.status} ${JSON.stringify(created.json)}`);
  return settled(created.json.id, options.key);
}

async function answer(actionId: string, text: string): Promise<any> {
  const response = await api("POST", `/v1/actions/${actionId}/answer?wait=20`, { answer: text });
  check(response.status === 202 || response.status === 200, `answer ${actionId}: ${response.status} ${JSON.stringify(response.json)}`);
  return settled(actionId);
}

/** A sandbox user of its own with a password of its own (a secret to look for). */
async function sandboxUser(challenge: string, extra: Record<string, unknown> = {}): Promise<{ handle: string; password: string }> {
  const handle = `${challenge.slice(0, 4)}_${randomBytes(6).toString("hex")}`;
  const password = randomSecret(`pw-${challenge}`);
  addSecret("password", `sandbox user ${handle}`, password);
  const created = await live.sandboxApi("POST", "/_sandbox/users", { handle, name: `Scan ${handle}`, password, challenge, ...extra });
  check(created?.handle === handle, `sandbox user: ${JSON.stringify(created)}`);
  return { handle, password };
}

async function addAccount(handle: string, fields: Record<string, unknown>, key = live.key): Promise<string> {
  const created = await api("POST", "/v1/accounts", { platform: "sandbox", username: handle, ...fields }, { key });
  check(created.status === 201, `POST /v1/accounts: ${created.status} ${JSON.stringify(created.json)}`);
  accountIds.push(created.json.id);
  return created.json.id;
}

async function latestCode(handle: string): Promise<string> {
  const outbox = await live.sandboxApi("GET", `/_sandbox/outbox?to=${handle}`);
  const code: unknown = outbox?.[0]?.code;
  check(typeof code === "string", `no code was sent to ${handle}`);
  // An answer is sealed at rest and never echoed (DESIGN §11).
  addSecret("challenge_answer", `${outbox[0].channel} code sent to ${handle}`, code as string);
  return code as string;
}

/** GETs a live link's page and its /state, as a person's browser would first. */
async function openLink(url: string): Promise<any> {
  const page = await rec.live("GET", url);
  check(page.status === 200, `GET live page: ${page.status}`);
  const state = await rec.live("GET", `${url}/state`);
  check(state.status === 200, `GET live state: ${state.status}`);
  return JSON.parse(state.text);
}

/** The live view's WebSocket, every message recorded (frames by size only: they are JPEG pixels). */
async function watch(url: string): Promise<WebSocket> {
  const path = new URL(url).pathname;
  const socket = new WebSocket(`${url.replace(/^http/, "ws")}/ws?w=1280&h=800`);
  socket.on("message", (data) => {
    const text = String(data);
    try {
      const message = JSON.parse(text) as { type?: string; data?: string };
      rec.wsMessage(path, message.type === "frame" ? JSON.stringify({ ...message, data: `<${message.data?.length ?? 0} base64 chars>` }) : text);
    } catch {
      rec.wsMessage(path, text);
    }
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  return socket;
}

/** Clicks, through the live view's input, at the middle of an element of the account's page. */
async function clickVia(socket: WebSocket, target: ReturnType<Page["locator"]>): Promise<void> {
  const box = await target.boundingBox();
  check(box !== null, "element not on screen");
  socket.send(JSON.stringify({ type: "click", x: box!.x + box!.width / 2, y: box!.y + box!.height / 2 }));
}

async function until<T>(read: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs?: number): Promise<T> {
  return eventually(read, { what, timeoutMs, everyMs: 100 });
}

async function call(name: string, args: Record<string, unknown>): Promise<{ data: any; text: string; isError: boolean }> {
  const result = await callTool(client!, name, args, { timeout: 60_000 });
  // What the service sent, without the copies `callTool` adds (the scans read each part once).
  const { text: _text, data: _data, ...sent } = result;
  rec.toolCalls.push({ name, args, result: sent });
  noteChallenge(result.data?.action ?? result.data);
  return result;
}

// ---------------------------------------------------------------- the run, one flow per challenge kind

/** TOTP: the stored secret answers it, no pause. */
async function totpFlow(): Promise<void> {
  const totp = randomBase32();
  addSecret("totp_secret", "TOTP user's secret", totp);
  const { handle, password } = await sandboxUser("totp", { totp_secret: totp });
  const accountId = await addAccount(handle, { password, totp_secret: totp });
  const action = await run(accountId, "connect");
  check(action.status === "succeeded", `totp connect: ${JSON.stringify(action)}`);
  challengeKinds.add("two_factor_code (stored secret)");
  const posted = await run(accountId, "post", { text: `scan post ${handle}` });
  check(posted.status === "succeeded", `totp post: ${JSON.stringify(posted)}`);
}

/** E-mail code through REST, under an Idempotency-Key replayed before and after the answer. */
async function emailFlow(): Promise<void> {
  const { handle, password } = await sandboxUser("email");
  const accountId = await addAccount(handle, { password });
  const body = { account_id: accountId, type: "connect", params: {} };
  const headers = { "Idempotency-Key": `scan-${handle}` };
  const first = await api("POST", "/v1/actions?wait=20", body, { headers });
  check(first.status === 202, `idempotent create: ${first.status}`);
  const paused = first.json.status === "needs_input" ? noteChallenge(first.json) : await settled(first.json.id);
  check(paused.status === "needs_input" && paused.challenge?.kind === "email_code", `email pause: ${JSON.stringify(paused)}`);
  const replay = await api("POST", "/v1/actions?wait=0", body, { headers });
  check(replay.headers.get("idempotency-replayed") === "true" && replay.json.id === paused.id, `replay: ${replay.status} ${JSON.stringify(replay.json)}`);
  const different = await api("POST", "/v1/actions", { ...body, type: "post", params: { text: "other" } }, { headers });
  check(different.status === 422, `same key, other body: ${different.status}`);
  await openLink(paused.challenge.sign_in_url);
  // The same key over MCP is the same request (keys are shared across surfaces).
  const overMcp = await call("run_action", { ...body, idempotency_key: headers["Idempotency-Key"], wait_seconds: 0 });
  check(overMcp.data?.id === paused.id, `MCP replay of a REST key: ${overMcp.text}`);
  const done = await answer(paused.id, await latestCode(handle));
  check(done.status === "succeeded", `email answer: ${JSON.stringify(done)}`);
  const after = await api("POST", "/v1/actions", body, { headers });
  check(after.status === 200 && after.json.status === "succeeded" && after.headers.get("idempotency-replayed") === "true", `replay after: ${after.status}`);
  await openLink(paused.challenge.sign_in_url);
}

/** SMS code through REST, after a wrong password was fixed with PATCH. */
async function smsFlow(): Promise<void> {
  const { handle, password } = await sandboxUser("sms");
  const wrong = randomSecret("pw-wrong");
  addSecret("password", `wrong password first given for ${handle}`, wrong);
  const accountId = await addAccount(handle, { password: wrong });
  const refused = await run(accountId, "connect");
  check(refused.status === "failed" && refused.error?.code === "login_failed", `wrong password: ${JSON.stringify(refused)}`);
  const fixed = await api("PATCH", `/v1/accounts/${accountId}`, { password });
  check(fixed.status === 200, `PATCH: ${fixed.status}`);
  const paused = await run(accountId, "connect");
  check(paused.status === "needs_input" && paused.challenge?.kind === "sms_code", `sms pause: ${JSON.stringify(paused)}`);
  const done = await answer(paused.id, await latestCode(handle));
  check(done.status === "succeeded", `sms answer: ${JSON.stringify(done)}`);
}

/** Device approval: API and MCP answers are refused with the link; the other device approves. */
async function deviceFlow(): Promise<void> {
  const { handle, password } = await sandboxUser("device");
  const accountId = await addAccount(handle, { password });
  const paused = await run(accountId, "connect");
  check(paused.status === "needs_input" && paused.challenge?.kind === "device_approval", `device pause: ${JSON.stringify(paused)}`);
  const refused = await api("POST", `/v1/actions/${paused.id}/answer`, { answer: "yes" });
  check(refused.status === 409, `REST answer to a device approval: ${refused.status}`);
  const refusedOverMcp = await call("answer_challenge", { action_id: paused.id, answer: "yes", wait_seconds: 0 });
  check(refusedOverMcp.isError, `MCP answer to a device approval: ${refusedOverMcp.text}`);
  await openLink(paused.challenge.sign_in_url);
  const approved = await live.sandboxApi("POST", "/_sandbox/devices/approve", { handle });
  check(approved?.approved === 1, `approve: ${JSON.stringify(approved)}`);
  const done = await finished(paused.id);
  check(done.status === "succeeded", `device: ${JSON.stringify(done)}`);
}

/** Captcha: solved by clicking the tiles through the live view's WebSocket. */
async function captchaFlow(): Promise<void> {
  const { handle, password } = await sandboxUser("captcha");
  // An operator key may run and answer actions, not add accounts.
  const accountId = await addAccount(handle, { password });
  const paused = await run(accountId, "connect", {}, { key: operatorKey });
  check(paused.status === "needs_input" && paused.challenge?.kind === "captcha", `captcha pause: ${JSON.stringify(paused)}`);
  const refused = await api("POST", `/v1/actions/${paused.id}/answer`, { answer: "star" }, { key: operatorKey });
  check(refused.status === 409, `REST answer to a captcha: ${refused.status}`);
  const url: string = paused.challenge.sign_in_url;
  await openLink(url);
  const socket = await watch(url);
  try {
    const page = await until(() => live.server.executor.pages.get(paused.id), "the captcha page");
    const word = (await page.locator("p strong").first().innerText()).trim();
    for (const tile of await page.getByRole("button", { name: word, exact: true }).all()) {
      await clickVia(socket, tile);
      await until(async () => (await tile.getAttribute("aria-pressed")) === "true", "a pressed tile");
    }
    await clickVia(socket, page.getByRole("button", { name: "Verify", exact: true }));
    const done = await finished(paused.id, operatorKey);
    check(done.status === "succeeded", `captcha: ${JSON.stringify(done)}`);
  } finally {
    socket.close();
  }
  await openLink(url);
}

/** Security question (kind other): a wrong answer through REST, the right one through the live page's answer box. */
async function questionFlow(): Promise<void> {
  const secretAnswer = randomSecret("answer");
  addSecret("challenge_answer", "security question's answer", secretAnswer);
  const { handle, password } = await sandboxUser("question", { security_question: "Your secret word?", security_answer: secretAnswer });
  const accountId = await addAccount(handle, { password });
  const paused = await run(accountId, "connect");
  check(paused.status === "needs_input" && paused.challenge?.kind === "other", `question pause: ${JSON.stringify(paused)}`);
  const wrongAnswer = randomSecret("not-it");
  addSecret("challenge_answer", "a refused answer to the security question", wrongAnswer);
  const again = await answer(paused.id, wrongAnswer);
  check(again.status === "needs_input", `wrong answer: ${JSON.stringify(again)}`);
  const url: string = again.challenge.sign_in_url;
  await openLink(url);
  const answered = await rec.live("POST", `${url}/answer`, { answer: secretAnswer });
  check(answered.status === 202, `live answer: ${answered.status} ${answered.text}`);
  const done = await finished(paused.id);
  check(done.status === "succeeded", `question: ${JSON.stringify(done)}`);
}

/** Checkpoint: the platform restricts the account; the action fails. */
async function checkpointFlow(): Promise<void> {
  const { handle, password } = await sandboxUser("checkpoint");
  const accountId = await addAccount(handle, { password });
  const failed = await run(accountId, "connect");
  check(failed.status === "failed", `checkpoint: ${JSON.stringify(failed)}`);
  challengeKinds.add("checkpoint (fails)");
}

/** An account without a password: the owner signs in by hand through a sign-in link, typing through the live view. */
async function ownerLinkFlow(): Promise<void> {
  const { handle, password } = await sandboxUser("none");
  const accountId = await addAccount(handle, {});
  const created = await api("POST", `/v1/accounts/${accountId}/sign-in-links`);
  check(created.status === 201 && typeof created.json?.url === "string", `sign-in link: ${created.status} ${JSON.stringify(created.json)}`);
  const url: string = created.json.url;
  await openLink(url);
  const socket = await watch(url);
  try {
    const page = await until(() => live.server.pool.contextOf(accountId)?.pages()[0], "the sign-in page");
    const username = page.getByLabel("Username");
    await username.waitFor();
    const type = async (field: ReturnType<Page["locator"]>, text: string): Promise<void> => {
      await clickVia(socket, field);
      await until(() => field.evaluate((element) => element === document.activeElement), "focus");
      socket.send(JSON.stringify({ type: "text", text }));
      await until(async () => (await field.inputValue()) === text, "typed text");
    };
    await type(username, handle);
    await type(page.getByLabel("Password"), password);
    await clickVia(socket, page.getByRole("button", { name: "Sign in", exact: true }));
    await until(async () => (await rec.live("GET", `${url}/state`)).text.includes('"connected"'), "the owner signed in");
  } finally {
    socket.close();
  }
  const posted = await run(accountId, "post", { text: `after a hand sign-in ${handle}` });
  check(posted.status === "succeeded" && !posted.challenge, `post after sign-in: ${JSON.stringify(posted)}`);
}

/** MCP: connect_account, get_action, answer_challenge, run_action with a replayed idempotency_key, update_account, list_accounts. */
async function mcpFlow(): Promise<void> {
  const { handle, password } = await sandboxUser("email");
  const connected = await call("connect_account", { platform: "sandbox", username: handle, password, wait_seconds: 30 });
  check(!connected.isError && connected.data?.action?.status === "needs_input", `connect_account: ${connected.text}`);
  const accountId: string = connected.data.account.id;
  accountIds.push(accountId);
  const actionId: string = connected.data.action.id;
  const read = await call("get_action", { action_id: actionId, wait_seconds: 0 });
  check(read.data?.status === "needs_input", `get_action: ${read.text}`);
  const uri = `action://${actionId}`;
  const resource = await client!.readResource({ uri });
  rec.resourceReads.push({ uri, result: resource });
  check(JSON.stringify(resource).includes("needs_input"), `resources/read: ${JSON.stringify(resource)}`);
  const done = await call("answer_challenge", { action_id: actionId, answer: await latestCode(handle), wait_seconds: 30 });
  check(done.data?.status === "succeeded", `answer_challenge: ${done.text}`);
  const key = `mcp-${handle}`;
  const post = { account_id: accountId, type: "post", params: { text: `over MCP ${handle}` }, idempotency_key: key, wait_seconds: 30 };
  const posted = await call("run_action", post);
  check(posted.data?.status === "succeeded", `run_action: ${posted.text}`);
  const replayed = await call("run_action", post);
  check(replayed.data?.id === posted.data.id, `run_action replay: ${replayed.text}`);
  const newPassword = randomSecret("pw-updated");
  addSecret("password", `password set with update_account for ${handle}`, newPassword);
  const updated = await call("update_account", { account_id: accountId, password: newPassword });
  check(!updated.isError, `update_account: ${updated.text}`);
  await call("list_accounts", {});
  await call("list_actions", { account_id: accountId });
  await call("get_action", { action_id: actionId });
  rec.resourceReads.push({ uri, result: await client!.readResource({ uri }) });
}

/** An account and its sandbox user (own password) whose e-mail and SMS URL are the account's inbox (DESIGN §15). */
async function inboxAccount(challenge: "email" | "sms"): Promise<{ handle: string; accountId: string; inbox: { email: string; sms_url: string } }> {
  const handle = `${challenge.slice(0, 4)}_${randomBytes(6).toString("hex")}`;
  const password = randomSecret(`pw-inbox-${challenge}`);
  addSecret("password", `sandbox user ${handle}`, password);
  const accountId = await addAccount(handle, { password });
  const inbox = (await api("GET", `/v1/accounts/${accountId}`)).json?.inbox as { email: string; sms_url: string } | undefined;
  check(typeof inbox?.email === "string" && typeof inbox.sms_url === "string", `no inbox on ${accountId}`);
  addInboxTokens(`of ${handle}`, inbox!);
  const created = await live.sandboxApi("POST", "/_sandbox/users", { handle, name: `Scan ${handle}`, password, challenge, email: inbox!.email, sms_url: inbox!.sms_url });
  check(created?.handle === handle, `sandbox user: ${JSON.stringify(created)}`);
  return { handle, accountId, inbox: inbox! };
}

function addInboxTokens(label: string, inbox: { email: string; sms_url: string }): void {
  const local = inbox.email.split("@")[0]!;
  addSecret("inbox_token", `inbox e-mail token ${label}`, local, Buffer.from(local, "hex"));
  addSecret("inbox_token", `SMS URL ${label}`, inbox.sms_url);
  addSecret("inbox_token", `SMS token ${label}`, inbox.sms_url.split("/").pop()!);
}

/** A message of the test's own: a distinctive code and text (both secrets), the code beside "code" so the inbox finds it. */
function inboxMessage(label: string): string {
  const code = String(randomBytes(4).readUInt32BE() % 90_000_000 + 10_000_000);
  const marker = randomSecret(`inbox-${label}`);
  addSecret("inbox_message", `code in ${label}`, code);
  addSecret("inbox_message", `text of ${label}`, marker);
  return `Your verification code is ${code}. ${marker}`;
}

/** The sandbox's newest message to a user, as its inbox received it: its code and text are secrets. */
async function sentTo(handle: string): Promise<void> {
  const outbox = await live.sandboxApi("GET", `/_sandbox/outbox?to=${handle}`);
  const sent = outbox?.[0] as { channel: string; code?: string; text: string } | undefined;
  check(typeof sent?.code === "string", `no code was sent to ${handle}`);
  addSecret("inbox_message", `${sent!.channel} code the sandbox sent ${handle}`, sent!.code!);
  addSecret("inbox_message", `${sent!.channel} text the sandbox sent ${handle}`, sent!.text);
}

/**
 * The inbox: a mailed and a texted code answer connects by themselves; a mail over SMTP, texts to the
 * SMS URL (JSON and a gateway's form), messages pushed over REST and MCP, one too long; the messages
 * listed; the address and SMS URL replaced.
 */
async function inboxFlow(): Promise<void> {
  for (const challenge of ["email", "sms"] as const) {
    const { handle, accountId } = await inboxAccount(challenge);
    const created = await api("POST", "/v1/actions", { account_id: accountId, type: "connect", params: {} });
    check(created.status === 202, `inbox connect: ${created.status} ${JSON.stringify(created.json)}`);
    const done = await finished(created.json.id);
    check(done.status === "succeeded" && done.answered_by === "inbox", `${challenge} code through the inbox: ${JSON.stringify(done)}`);
    await sentTo(handle);
  }
  const { accountId, inbox } = await inboxAccount("email");
  const mailer = nodemailer.createTransport({ host: "127.0.0.1", port: live.config.smtp.port!, secure: false, ignoreTLS: true });
  const subject = randomSecret("inbox-subject");
  addSecret("inbox_message", "a mail's subject", subject);
  await mailer.sendMail({ from: "Scan <scan@example.test>", to: inbox.email, subject, text: inboxMessage("a mail over SMTP") });
  mailer.close();
  const texted = await rec.live("POST", inbox.sms_url, { from: "+15550100", text: inboxMessage("a JSON text to the SMS URL") });
  check(texted.status >= 200 && texted.status < 300, `SMS URL (JSON): ${texted.status} ${texted.text}`);
  const form = await fetch(inbox.sms_url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ From: "+15550101", Body: inboxMessage("a gateway's form text to the SMS URL") }) });
  check(form.status >= 200 && form.status < 300, `SMS URL (form): ${form.status}`);
  const pushed = await api("POST", `/v1/accounts/${accountId}/messages`, { channel: "sms", text: inboxMessage("a message pushed over REST") });
  check(pushed.status === 202, `push: ${pushed.status} ${JSON.stringify(pushed.json)}`);
  const tooLong = await api("POST", `/v1/accounts/${accountId}/messages`, { channel: "email", text: `${inboxMessage("a refused, too long message")} ${"x".repeat(20_001)}` });
  check(tooLong.status === 422 || tooLong.status === 400, `too long a message: ${tooLong.status}`);
  const forwarded = await call("forward_message", { account_id: accountId, channel: "email", text: inboxMessage("a message forwarded over MCP") });
  check(!forwarded.isError, `forward_message: ${forwarded.text}`);
  const listed = await until(async () => {
    const messages = await api("GET", `/v1/accounts/${accountId}/messages`);
    return messages.json?.data?.length >= 5 ? messages : undefined;
  }, "the inbox to list its five messages");
  check(listed.json.data.every((message: { used_for?: string }) => message.used_for === undefined), `unused messages: ${JSON.stringify(listed.json)}`);
  const rotated = await api("POST", `/v1/accounts/${accountId}/inbox/rotate`);
  check(rotated.status === 200 && rotated.json.inbox?.sms_url !== inbox.sms_url, `rotate: ${rotated.status}`);
  addInboxTokens("after replacing", rotated.json.inbox);
  const old = await rec.live("POST", inbox.sms_url, { text: inboxMessage("a text to the replaced SMS URL") });
  check(old.status === 404, `old SMS URL: ${old.status}`);
}

/** Receives the service's webhook deliveries, records each (as the endpoint got it) and checks its signature with the endpoint's secret. */
async function startReceiver(): Promise<void> {
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const headers = Object.entries(request.headers).map(([name, value]): [string, string] => [name, String(value)]);
      rec.webhook(request.url ?? "/", headers, body);
      try {
        new Webhook(webhookSecret ?? "whsec_").verify(body, request.headers as Record<string, string>);
      } catch (error) {
        unverified.push(`${request.headers["webhook-id"]}: ${String(error)}`);
      }
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const address = receiver.address();
  receiverUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/hook`;
}

/** The endpoint, made before anything else so every event of the run reaches it (DESIGN §13); its secret is shown only now. */
async function webhookEndpoint(): Promise<void> {
  const created = await api("POST", "/v1/webhooks", { url: receiverUrl });
  check(created.status === 201 && typeof created.json?.secret === "string" && created.json.secret.startsWith("whsec_"), `POST /v1/webhooks: ${created.status} ${JSON.stringify(created.json)}`);
  webhookId = created.json.id;
  webhookSecret = created.json.secret;
  addSecret("webhook_secret", "webhook endpoint's signing secret", created.json.secret, Buffer.from(created.json.secret.slice("whsec_".length), "base64"));
}

/** After the flows: every delivery arrived; the endpoint and its deliveries read back, one retried; the event stream resumed; feedback sent and read. */
async function eventsAndFeedbackFlow(): Promise<void> {
  check(webhookId !== undefined, "no webhook endpoint was made");
  const deliveries = await until(async () => {
    const page = await api("GET", `/v1/webhooks/${webhookId}/deliveries?limit=100`);
    const data: any[] = page.json?.data ?? [];
    return data.length > 0 && data.every((delivery) => delivery.state === "succeeded") ? data : undefined;
  }, "every webhook delivery to succeed", 30_000);
  const listed = await api("GET", "/v1/webhooks");
  check(listed.status === 200 && listed.json.data.some((endpoint: any) => endpoint.id === webhookId), `GET /v1/webhooks: ${listed.status}`);
  const got = rec.exchanges.filter((exchange) => exchange.surface === "webhook").length;
  const retried = await api("POST", `/v1/webhooks/${webhookId}/deliveries/${deliveries[0].id}/retry`);
  check(retried.status === 202, `retry: ${retried.status} ${JSON.stringify(retried.json)}`);
  await until(() => rec.exchanges.filter((exchange) => exchange.surface === "webhook").length > got, "the retried delivery");
  // The stream, resumed after the oldest event delivered: what came since is sent at once.
  const stream = await rec.stream("/v1/events", { key: live.key, headers: { "Last-Event-ID": deliveries.at(-1).event_id } }, 1_500);
  check(stream.status === 200 && stream.body.includes("event: action.updated"), `GET /v1/events: ${stream.status} ${stream.body.slice(0, 200)}`);
  // Feedback about a failed action, over REST and MCP; read back with any screenshot kept.
  const actions = await api("GET", "/v1/actions?limit=100&status=failed");
  const failed: string | undefined = actions.json?.data?.[0]?.id;
  check(failed !== undefined, `no failed action to send feedback about: ${JSON.stringify(actions.json)}`);
  const sent = await api("POST", "/v1/feedback", { message: "The checkpoint page was not expected.", action_id: failed });
  check(sent.status === 201, `POST /v1/feedback: ${sent.status} ${JSON.stringify(sent.json)}`);
  const overMcp = await call("send_feedback", { message: "Feedback over MCP.", action_id: failed });
  check(!overMcp.isError, `send_feedback: ${overMcp.text}`);
  const feedback = await api("GET", "/v1/feedback");
  check(feedback.status === 200 && feedback.json.data.length >= 2, `GET /v1/feedback: ${feedback.status}`);
  for (const item of feedback.json.data) await api("GET", `/v1/feedback/${item.id}/screenshot`);
}

async function flow(name: string, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    runProblems.push(`${name}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

// ---------------------------------------------------------------- set-up and the scans

beforeAll(async () => {
  logDir = mkdtempSync(join(tmpdir(), "secrets-scan-"));
  logFile = join(logDir, "service.log");
  // The service's own logger (src/engine/logger.ts: same redaction), at debug, into a file.
  logger = pino({ level: "debug", redact: { paths: REDACT_PATHS, censor: "[redacted]" } }, pino.destination({ dest: logFile, sync: true }));
  await startReceiver();
  // The receiver is on loopback: private targets allowed, as ACTION_SERVICE_WEBHOOK_ALLOW_PRIVATE allows them.
  live = await startLiveService({ inbox: true, server: { logger }, env: { ACTION_SERVICE_WEBHOOK_ALLOW_PRIVATE: "true" } });
  dataDir = live.config.dataDir;
  operatorKey = (await live.server.service.engine.keys.issue({ role: "operator" })).key;
  addSecret("api_key", "admin key", live.key, Buffer.from(live.key.slice(3), "base64url"));
  addSecret("api_key", "operator key", operatorKey, Buffer.from(operatorKey.slice(3), "base64url"));

  client = new Client({ name: "secrets-scan", version: "1.0.0" }, { capabilities: { elicitation: { url: {} } } });
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    rec.serverRequests.push(request.params);
    return { action: "accept" };
  });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${live.url}/mcp`), { fetch: rec.mcpFetch, requestInit: { headers: { Authorization: `Bearer ${live.key}` } } }),
  );
  await client.listTools();
  await flow("webhook endpoint", webhookEndpoint);

  await Promise.all([
    flow("totp", totpFlow),
    flow("email + idempotency", emailFlow),
    flow("sms + PATCH", smsFlow),
    flow("device", deviceFlow),
    flow("captcha", captchaFlow),
    flow("question", questionFlow),
    flow("checkpoint", checkpointFlow),
    flow("owner sign-in link", ownerLinkFlow),
    flow("mcp", mcpFlow),
  ]);
  // After the others: two more sign-ins at once on this small machine's Chromium would slow them past their waits.
  await flow("inbox", inboxFlow);
  await flow("events and feedback", eventsAndFeedbackFlow);

  // Read everything back once more, as a client would.
  await flow("read back", async () => {
    await api("GET", "/v1/accounts");
    for (const id of accountIds) await api("GET", `/v1/accounts/${id}`);
    const actions = await api("GET", "/v1/actions?limit=100");
    for (const action of actions.json?.data ?? []) await api("GET", `/v1/actions/${action.id}`);
    await api("GET", "/v1/credits");
    await api("GET", "/v1/events?limit=200");
    await call("list_accounts", {});
  });

  // The sandbox's session (and remembered-device) cookies, from the accounts' live contexts and their saved sessions.
  for (const id of accountIds) {
    const open = (await live.server.pool.contextOf(id)?.cookies()) ?? [];
    const sealed = await live.server.service.store.accounts.getSecret(id, "session");
    const saved = sealed ? ((JSON.parse(sealed) as { cookies?: { name: string; value: string }[] }).cookies ?? []) : [];
    for (const cookie of [...open, ...saved]) if (cookie.value.length >= 16) addSecret("session_cookie", `cookie ${cookie.name} of ${id}`, cookie.value);
  }
  const masterKeyFile = join(dataDir, "master.key");
  if (existsSync(masterKeyFile)) {
    const masterKey = readFileSync(masterKeyFile, "utf8").trim();
    addSecret("master_key", "master key", masterKey, Buffer.from(masterKey, "base64"));
  }

  // Every live token anything handed out, and what the service says it opens.
  const everything = [
    ...rec.exchanges.map((exchange) => exchange.body),
    ...rec.toolCalls.map((toolCall) => JSON.stringify(toolCall.result)),
    JSON.stringify(rec.resourceReads),
    JSON.stringify(rec.serverRequests),
  ].join("\n");
  for (const token of new Set(tokensIn(everything))) {
    const target = await live.server.service.engine.live.resolve(token);
    owners.set(token, target && target !== "expired" ? (target.kind === "challenge" ? { kind: "challenge", actionId: target.action.id } : { kind: "sign_in", accountId: target.account.id }) : undefined);
    addSecret("link_token", `live link of ${JSON.stringify(owners.get(token))}`, token, Buffer.from(token, "base64url"));
  }

  // The data dir as it is on disk while the service runs: the WAL holds what was written lately.
  await client.close();
  client = undefined;
  await sleep(200);
  dataTree = readTree(dataDir);
}, 210_000);

afterAll(async () => {
  await client?.close();
  await live?.close();
  if (receiver) {
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
  if (logDir) rmSync(logDir, { recursive: true, force: true });
});

const expectNone = (findings: Finding[]): void => expect(findings.map(describeFinding)).toEqual([]);

describe("the scanner", () => {
  it("finds a secret planted in each encoding it searches, at every alignment inside a base64 blob, and keeps a link outside its one place", () => {
    const secret: Secret = { kind: "link_token", label: "planted", value: randomBytes(32).toString("base64url") };
    secret.raw = Buffer.from(secret.value, "base64url");
    for (const needle of needlesOf(secret)) {
      const haystack = Buffer.concat([randomBytes(37), needle.bytes, randomBytes(11)]);
      expect(scanBytes("planted", haystack, [secret]).map((finding) => finding.encoding)).toContain(needle.encoding);
    }
    for (const filler of [0, 1, 2, 5]) {
      const blob = Buffer.concat([randomBytes(filler), Buffer.from(`{"secret":"${secret.value}"}`), randomBytes(3)]).toString("base64");
      expect(scanText("blob", blob, [secret]).length, `filler ${filler}`).toBeGreaterThan(0);
    }
    // A challenge's link is handed out only on its own action while at needs_input.
    const mine: TokenOwner = { kind: "challenge", actionId: "act_mine" };
    const action = (id: string, status: string) => ({ object: "action", id, status, challenge: { kind: "email_code", sign_in_url: `http://127.0.0.1:1/live/${secret.value}` } });
    const exchange = (json: unknown) => ({ surface: "rest" as const, method: "GET", path: "/v1/actions", requestBody: undefined, status: 200, headers: [], body: JSON.stringify(json) });
    expect(exchangeRemainder(exchange(action("act_mine", "needs_input")), () => mine)).not.toContain(secret.value);
    expect(exchangeRemainder(exchange(action("act_other", "needs_input")), () => mine)).toContain(secret.value);
    expect(exchangeRemainder(exchange(action("act_mine", "succeeded")), () => mine)).toContain(secret.value);
    expect(exchangeRemainder(exchange({ error: { code: "conflict", message: `see /live/${secret.value}` } }), () => mine)).toContain(secret.value);
    const refusal = { isError: true, content: [{ type: "text" as const, text: `conflict: Open it.\nDetails: {"sign_in_url":"http://h/live/${secret.value}"}` }] };
    expect(toolResultRemainder("answer_challenge", { action_id: "act_mine" }, refusal, () => mine)).not.toContain(secret.value);
    expect(toolResultRemainder("get_action", { action_id: "act_mine" }, refusal, () => mine)).toContain(secret.value);
    // A webhook secret is handed out once, in the `secret` of the 201 creating its endpoint; anywhere else it is a finding.
    const whsec: Secret = { kind: "webhook_secret", label: "planted", value: `whsec_${randomBytes(32).toString("base64")}` };
    const created = { ...exchange({ id: "whe_x", object: "webhook", secret: whsec.value }), method: "POST", path: "/v1/webhooks", status: 201 };
    expect(scanText("create", secretRemainder(created), [whsec])).toEqual([]);
    expect(scanText("list", secretRemainder({ ...created, method: "GET", status: 200 }), [whsec]).length).toBeGreaterThan(0);
    expect(scanText("create, twice", secretRemainder({ ...created, body: JSON.stringify({ id: "whe_x", secret: whsec.value, url: `http://h/?s=${whsec.value}` }) }), [whsec]).length).toBeGreaterThan(0);
  });
});

describe("a full run of the real service", () => {
  it("went as the design says, through every challenge kind, and gave the scan something to find", () => {
    expect(runProblems).toEqual([]);
    expect([...challengeKinds].sort()).toEqual(
      ["captcha", "checkpoint (fails)", "device_approval", "email_code", "other", "sms_code", "two_factor_code (stored secret)"].sort(),
    );
    const count = (kind: SecretKind) => secretsOf(kind).length;
    expect(count("password")).toBeGreaterThanOrEqual(10);
    expect(count("totp_secret")).toBe(1);
    // The security question's two answers, and the e-mail and text-message codes (REST, MCP).
    expect(count("challenge_answer")).toBeGreaterThanOrEqual(5);
    expect(count("api_key")).toBe(2);
    expect(count("master_key")).toBe(1);
    expect(count("webhook_secret")).toBe(1);
    // The inbox's messages (the sandbox's two codes and texts, the test's own seven codes and texts, a subject) and its tokens (three accounts', one replaced).
    expect(count("inbox_message")).toBeGreaterThanOrEqual(19);
    expect(count("inbox_token")).toBe(12);
    expect(secretsOf("session_cookie").filter((secret) => secret.label.includes("sbx_session")).length).toBeGreaterThanOrEqual(5);
    // One link per pause (the security question's refused answer keeps its link or gets a new one) and the owner's sign-in link.
    expect(count("link_token")).toBeGreaterThanOrEqual(7);
    expect([...owners.values()].filter((who) => who?.kind === "sign_in")).toHaveLength(1);
    expect(rec.toolCalls.length).toBeGreaterThanOrEqual(10);
    expect(rec.serverRequests.length).toBeGreaterThanOrEqual(1);
    expect(rec.resourceReads).toHaveLength(2);
    expect(rec.exchanges.filter((exchange) => exchange.surface === "ws").length).toBeGreaterThan(0);
    // Every event went to the endpoint, signed with the secret its 201 handed out (and only that answer had it).
    expect(rec.exchanges.filter((exchange) => exchange.surface === "webhook").length).toBeGreaterThan(10);
    expect(unverified).toEqual([]);
    const handedOut = rec.exchanges.filter((exchange) => exchange.surface === "rest" && webhookSecret !== undefined && exchange.body.includes(webhookSecret));
    expect(handedOut.map((exchange) => `${exchange.method} ${exchange.path} → ${exchange.status}`)).toEqual(["POST /v1/webhooks → 201"]);
  });
});

describe("at rest", () => {
  it("the data dir is 0700 and every file in it 0600 (DESIGN §10)", () => {
    const wrong = dataTree
      .filter((entry) => entry.mode !== (entry.isDirectory ? 0o700 : 0o600))
      .map((entry) => `${entry.relative}: ${entry.mode.toString(8).padStart(4, "0")}, want ${entry.isDirectory ? "0700" : "0600"}`);
    expect(wrong).toEqual([]);
  });

  it("no file in the data dir (the SQLite -wal and -shm included, read raw) holds a secret, an inbox's message, code or token, or a live token, in plain text, hex or base64", () => {
    const files = dataTree.filter((entry) => !entry.isDirectory);
    expect(files.map((entry) => entry.relative)).toEqual(expect.arrayContaining(["action-service.db", "action-service.db-wal", "action-service.db-shm", "master.key"]));
    expect(files.find((entry) => entry.relative.endsWith("-wal"))!.bytes!.length).toBeGreaterThan(0);
    const findings: Finding[] = [];
    const stray: string[] = [];
    for (const file of files) {
      // The key file holds the master key, and only that.
      const searched = file.relative === "master.key" ? secrets.filter((secret) => secret.kind !== "master_key") : secrets;
      findings.push(...scanBytes(file.relative, file.bytes!, searched));
      for (const match of file.bytes!.toString("latin1").matchAll(LIVE_TOKEN)) stray.push(`${file.relative}: /live/${match[1]!.slice(0, 6)}… at ${match.index}`);
    }
    expectNone(findings);
    expect(stray).toEqual([]);
  });
});

describe("in the log", () => {
  it("the service's log (pino at debug) holds no secret, no inbox message, code or token, and no live link", () => {
    const bytes = readFileSync(logFile);
    expect(bytes.length, "the log captured nothing: is the logger wired?").toBeGreaterThan(0);
    expectNone(scanBytes("service.log", bytes, secrets));
    expect([...bytes.toString("utf8").matchAll(LIVE_TOKEN)].map((match) => match[0].slice(0, 14))).toEqual([]);
  });
});

describe("in what the service answered", () => {
  it("no REST or live-link response body or header holds a secret or an inbox's message (its code, its text), a live token only where it is handed out, an inbox's token only in an account's inbox", () => {
    const answers = rec.exchanges.filter((exchange) => exchange.surface === "rest" || exchange.surface === "live" || exchange.surface === "ws");
    expect(answers.length).toBeGreaterThan(50);
    const findings: Finding[] = [];
    for (const [index, exchange] of answers.entries()) {
      const where = `${exchange.surface} #${index} ${exchange.method} ${exchange.path.replace(LIVE_TOKEN, "/live/<token>")} → ${exchange.status}`;
      // Everything but the tokens (headers included), in the answer once the webhook secret's one hand-out (its 201) is taken out; the tokens, in what is left once theirs are.
      findings.push(...scanText(where, secretRemainder(exchange), secrets.filter((secret) => secret.kind !== "link_token" && secret.kind !== "inbox_token")));
      findings.push(...scanText(where, exchangeRemainder(exchange, owner), secretsOf("link_token")));
      findings.push(...scanText(where, withoutInboxes(secretRemainder(exchange)), secretsOf("inbox_token")));
    }
    expectNone(findings);
  });

  it("no MCP tool result or MCP HTTP answer holds a secret or an inbox's message, a live token only where it is handed out, an inbox's token only in an account's inbox", () => {
    const findings: Finding[] = [];
    for (const [index, toolCall] of rec.toolCalls.entries()) {
      const where = `MCP ${toolCall.name} #${index}`;
      findings.push(...scanText(where, JSON.stringify(toolCall.result), secrets.filter((secret) => secret.kind !== "link_token" && secret.kind !== "inbox_token")));
      findings.push(...scanText(where, toolResultRemainder(toolCall.name, toolCall.args, toolCall.result, owner), secretsOf("link_token")));
      findings.push(...scanText(where, withoutInboxes(JSON.stringify(toolCall.result)), secretsOf("inbox_token")));
    }
    for (const [index, params] of rec.serverRequests.entries()) {
      findings.push(...scanText(`MCP elicitation #${index}`, JSON.stringify(params), secrets.filter((secret) => secret.kind !== "link_token")));
      findings.push(...scanText(`MCP elicitation #${index}`, JSON.stringify(elicitationRemainder(params, owner)), secretsOf("link_token")));
    }
    for (const [index, read] of rec.resourceReads.entries()) {
      findings.push(...scanText(`MCP resources/read #${index}`, JSON.stringify(read.result), secrets.filter((secret) => secret.kind !== "link_token")));
      findings.push(...scanText(`MCP resources/read #${index}`, resourceRemainder(read.result, owner), secretsOf("link_token")));
    }
    const transport = rec.exchanges.filter((exchange) => exchange.surface === "mcp-http");
    expect(transport.length).toBeGreaterThan(rec.toolCalls.length);
    for (const [index, exchange] of transport.entries()) {
      const where = `MCP HTTP #${index} ${exchange.method} → ${exchange.status}`;
      const headers = exchange.headers.map(([name, value]) => `${name}: ${value}`).join("\n");
      findings.push(...scanText(where, `${headers}\n${exchange.body}`, secrets.filter((secret) => secret.kind !== "link_token" && secret.kind !== "inbox_token")));
      findings.push(...scanText(where, withoutInboxes(`${headers}\n${exchange.body}`), secretsOf("inbox_token")));
      findings.push(...scanText(where, exchangeRemainder(exchange, owner), secretsOf("link_token")));
    }
    expectNone(findings);
  });
});

describe("in what the service sent", () => {
  it("no webhook delivery (headers and body) holds a secret or anything of an inbox — each is signed with the endpoint's, never carries it — and a live token only in a needs_input action's challenge", () => {
    const sent = rec.exchanges.filter((exchange) => exchange.surface === "webhook");
    expect(sent.length).toBeGreaterThan(0);
    const findings: Finding[] = [];
    for (const [index, exchange] of sent.entries()) {
      const where = `webhook delivery #${index} ${exchange.headers.find(([name]) => name === "webhook-id")?.[1] ?? ""}`;
      const headers = exchange.headers.map(([name, value]) => `${name}: ${value}`).join("\n");
      findings.push(...scanText(where, `${headers}\n${exchange.body}`, secrets.filter((secret) => secret.kind !== "link_token")));
      findings.push(...scanText(where, exchangeRemainder(exchange, owner), secretsOf("link_token")));
    }
    expectNone(findings);
  });
});
