import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { silentLogger } from "../../src/engine/logger.js";
import { startServer, type RunningServer } from "../../src/server.js";
import { startLocalDns, type LocalDns } from "../helpers/dns.js";
import { freePort } from "../helpers/processes.js";
import { HttpClient, PASSWORD, control } from "../sandbox/support.js";

// The quick start (`serve --sandbox`, `demo`): the service runs the sandbox itself. The sandbox's
// driver declares its senders, so its mails must vouch for themselves: the sandbox signs with a key
// made at start, and the inbox's DKIM check answers that key's record itself — no DNS has it.
let dns: LocalDns;
let server: RunningServer;
let dataDir: string;

beforeAll(async () => {
  // A DNS server that knows no name: the key's record cannot come from DNS.
  dns = await startLocalDns();
  dataDir = mkdtempSync(join(tmpdir(), "action-service-embedded-"));
  const smtpPort = await freePort();
  const config = loadConfig({
    ACTION_SERVICE_DATA_DIR: dataDir,
    ACTION_SERVICE_PORT: "0",
    SANDBOX_PORT: "0",
    ACTION_SERVICE_SMTP_PORT: String(smtpPort),
    SANDBOX_SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
    ACTION_SERVICE_DNS_SERVERS: dns.address,
    ACTION_SERVICE_LOG_LEVEL: "silent",
  });
  server = await startServer(config, { logger: silentLogger, sandbox: true });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await dns?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

it("the sandbox run in-process signs its mails with a fresh key that the service's inbox finds valid", async () => {
  const key = server.service.firstKey!.key;
  const handle = `embedded_${Date.now().toString(36)}`;
  const created = await fetch(`${server.url}/v1/accounts`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ platform: "sandbox", username: handle, password: PASSWORD }),
  });
  const { inbox } = (await created.json()) as { inbox: { email: string } };
  const received: { authenticated?: readonly string[] | undefined }[] = [];
  const engineInbox = server.service.engine.inbox;
  const receive = engineInbox.receive.bind(engineInbox);
  engineInbox.receive = (accountId, message) => {
    received.push(message);
    return receive(accountId, message);
  };
  const sandboxUrl = server.sandbox!.url;
  expect((await control(sandboxUrl, "POST", "/users", { handle, name: "Embedded", password: PASSWORD, challenge: "email", email: inbox.email })).status).toBe(201);
  // Signing in as the user makes the sandbox mail its code to the account's inbox.
  const client = new HttpClient((path, init) => fetch(`${sandboxUrl}${path}`, init));
  const { csrf } = await client.page("/login");
  expect((await client.postForm("/login", { _csrf: csrf, username: handle, password: PASSWORD })).headers.get("location")).toBe("/login/challenge");
  const deadline = Date.now() + 15_000;
  while (received.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
  expect(received.map((message) => message.authenticated)).toEqual([["sandbox.localhost"]]);
}, 30_000);
