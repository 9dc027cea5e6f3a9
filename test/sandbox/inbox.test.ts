import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { simpleParser, type ParsedMail } from "mailparser";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticatedDomains } from "../../src/inbox/dkim.js";
import { dnsResolver } from "../../src/inbox/dns.js";
import { INBOX } from "../../src/platforms/sandbox/pages.js";
import { createSandboxApp, dkimRecord, generateDkimKey, startSandbox, type RunningSandbox } from "../../src/sandbox/index.js";
import { startLocalDns, type LocalDns } from "../helpers/dns.js";
import { HttpClient, PASSWORD, control, createUser } from "./support.js";

/** A mail server that keeps every mail it is given, as the service's inbox or a mail catcher would. */
let smtp: SMTPServer;
const mails: ParsedMail[] = [];
/** Each kept mail as it came over the wire (what a DKIM signature covers). */
const raws = new Map<ParsedMail, Buffer>();
/** Publishes the DKIM keys the sandbox signs with. */
let dns: LocalDns;
/** A phone's forwarding rule: every text posted to it, by path. */
let gateway: Server;
const texts: { path: string; body: unknown }[] = [];
let sandbox: RunningSandbox;
let smsBase: string;

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["AUTH", "STARTTLS"],
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        const raw = Buffer.concat(chunks);
        simpleParser(raw).then((mail) => {
          raws.set(mail, raw);
          mails.push(mail);
          callback();
        }, callback);
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
  const smtpPort = (smtp.server.address() as AddressInfo).port;

  gateway = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => { body += chunk.toString("utf8"); });
    request.on("end", () => {
      texts.push({ path: request.url ?? "", body: JSON.parse(body) });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => gateway.listen(0, "127.0.0.1", resolve));
  smsBase = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;

  sandbox = await startSandbox({ port: 0, smtpUrl: `smtp://127.0.0.1:${smtpPort}` });
  dns = await startLocalDns();
});

afterAll(async () => {
  await sandbox?.close();
  await dns?.close();
  await new Promise<void>((resolve) => gateway?.close(() => resolve()));
  await new Promise<void>((resolve) => smtp?.close(resolve));
});

/** Waits (up to 5 s) for the first thing `find` returns. */
async function arrival<T>(find: () => T | undefined): Promise<T> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error("nothing arrived within 5 s");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const mailTo = (address: string) => arrival(() => mails.find((mail) => mail.to !== undefined && JSON.stringify(mail.to).includes(address)));
const overHttp = () => new HttpClient((path, init) => fetch(`${sandbox.url}${path}`, init));

async function signIn(client: HttpClient, handle: string): Promise<Response> {
  const { csrf } = await client.page("/login");
  return client.postForm("/login", { _csrf: csrf, username: handle, password: PASSWORD });
}

async function outbox(handle: string): Promise<Record<string, unknown>[]> {
  return (await control(sandbox.url, "GET", `/outbox?to=${handle}`)).json;
}

describe("the sandbox sends its codes like a real platform", () => {
  it("mails an e-mailed code to the user's address, the same code as in the outbox", async () => {
    const address = `mail_${Date.now()}@inbox.test`;
    const user = await createUser(sandbox.url, "email", { email: address });
    expect((await signIn(overHttp(), user.handle)).headers.get("location")).toBe("/login/challenge");
    const [entry] = await outbox(user.handle);
    const mail = await mailTo(address);

    expect(mail.from?.value).toEqual([{ name: "Sandbox Social", address: "no-reply@sandbox.localhost" }]);
    expect(mail.subject).toBe(`Your Sandbox Social code is ${String(entry?.code)}`);
    expect(mail.text).toContain(`Your Sandbox Social sign-in code is ${String(entry?.code)}.`);
    // The driver's declared pattern finds the code in the subject and in the text.
    expect(INBOX.code.exec(mail.subject ?? "")?.[1]).toBe(entry?.code);
    expect(INBOX.code.exec(mail.text ?? "")?.[1]).toBe(entry?.code);
  });

  it("signs its mails with DKIM for sandbox.localhost when given a key (SANDBOX_DKIM_KEY); unsigned without one", async () => {
    const key = generateDkimKey("sandbox");
    const record = dkimRecord(key);
    dns.set(record.name, record.value);
    const smtpUrl = `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`;
    const resolver = dnsResolver([dns.address]);
    for (const [app, vouched] of [[createSandboxApp({ smtpUrl, dkim: key }), ["sandbox.localhost"]], [createSandboxApp({ smtpUrl }), []]] as const) {
      const address = `dkim_${Date.now()}_${vouched.length}@inbox.test`;
      // A user of that sandbox's own (in-memory) state.
      expect((await app.request("/_sandbox/users", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ handle: `dkim${vouched.length}`, name: "D", password: PASSWORD, challenge: "email", email: address }) })).status).toBe(201);
      await signIn(new HttpClient(async (path, init) => app.request(path, init)), `dkim${vouched.length}`);
      const raw = raws.get(await mailTo(address))!;
      expect(await authenticatedDomains(raw, { resolver })).toEqual(vouched);
    }
  });

  it("posts a texted code to the user's sms_url as {from, text}", async () => {
    const path = `/sms/${Date.now()}`;
    const user = await createUser(sandbox.url, "sms", { sms_url: `${smsBase}${path}` });
    await signIn(overHttp(), user.handle);
    const [entry] = await outbox(user.handle);
    const text = await arrival(() => texts.find((posted) => posted.path === path));

    expect(text.body).toEqual({ from: "+15550100", text: entry?.text });
    expect(INBOX.code.exec((text.body as { text: string }).text)?.[1]).toBe(entry?.code);
  });

  it("checks sms_url and knows the magic_link challenge", async () => {
    const refused = await control(sandbox.url, "POST", "/users", { handle: "bad_sms", name: "Bad", password: PASSWORD, challenge: "sms", sms_url: "ftp://127.0.0.1/x" });
    expect(refused.status).toBe(422);
    const created = await createUser(sandbox.url, "magic_link", { sms_url: `${smsBase}/unused` });
    expect(created).toMatchObject({ challenge: "magic_link", sms_url: `${smsBase}/unused` });
  });

  it("does not hold up or fail the sign-in when the mail server refuses", async () => {
    const failures: string[] = [];
    // Nothing listens on port 1: every mail fails.
    const app = createSandboxApp({ smtpUrl: "smtp://127.0.0.1:1", onDeliveryFailure: (_error, channel) => failures.push(channel) });
    const client = new HttpClient(async (path, init) => app.request(path, init));
    expect((await signIn(client, "carol")).headers.get("location")).toBe("/login/challenge");
    expect((await client.page("/login/challenge")).body).toContain("Check your email");
    await arrival(() => failures[0]);
    expect(failures).toEqual(["email"]);
  });
});

describe("a magic_link user signs in with a one-time link", () => {
  it("mails a link that signs in the browser that typed the password, once, and no other", async () => {
    const address = `link_${Date.now()}@inbox.test`;
    const user = await createUser(sandbox.url, "magic_link", { email: address });
    const client = overHttp();
    expect((await signIn(client, user.handle)).headers.get("location")).toBe("/login/challenge");
    const waiting = await client.page("/login/challenge");
    expect(waiting.body).toContain("<h1>Check your email for a sign-in link</h1>");
    expect(waiting.body).toContain(`We sent a sign-in link to l***@inbox.test. Open it to continue.`);
    expect(waiting.body).not.toContain(`name="code"`);

    const [entry] = await outbox(user.handle);
    expect(entry).not.toHaveProperty("code");
    const link = String(entry?.link);
    expect(link).toMatch(new RegExp(`^${sandbox.url}/sign-in/link/[A-Za-z0-9_-]{22,}$`));
    const mail = await mailTo(address);
    expect(mail.subject).toBe("Sign in to Sandbox Social");
    expect(mail.text).toContain(link);
    expect(INBOX.link.exec(mail.text ?? "")?.[1]).toBe(link);
    const path = new URL(link).pathname;

    // Another browser: not signed in by it, and the link still works where it belongs.
    const other = overHttp();
    const elsewhere = await other.page(path);
    expect(elsewhere.response.status).toBe(403);
    expect(elsewhere.body).toContain("<h1>Open this link in the browser you signed in from</h1>");
    expect((await other.request("/feed")).headers.get("location")).toMatch(/^\/login/);
    await signIn(other, "alice");
    expect((await other.page(path)).body).toContain("Open this link in the browser you signed in from");

    // A made-up token in the right browser signs nothing in either.
    const forged = await client.page(`/sign-in/link/${"A".repeat(32)}`);
    expect(forged.body).toContain("<h1>This sign-in link has expired</h1>");
    expect((await client.request("/feed")).status).toBe(302);

    const opened = await client.request(path);
    expect(opened.status).toBe(302);
    expect(opened.headers.get("location")).toBe("/feed");
    expect((await client.page("/feed")).body).toContain(`/people/${user.handle}`);

    // Once only: the used link signs no one in, here or anywhere.
    const again = await client.page(path);
    expect(again.response.status).toBe(410);
    expect(again.body).toContain("<h1>This sign-in link has expired</h1>");
    const stranger = overHttp();
    expect((await stranger.page(path)).body).toContain("This sign-in link has expired");
    expect((await stranger.request("/feed")).status).toBe(302);
  });

  it("expires a link after 10 minutes; a new link works and remembers the device when asked", async () => {
    let now = Date.parse("2026-03-01T12:00:00Z");
    const app = createSandboxApp({ clock: () => new Date(now), origin: "http://sandbox.test" });
    const client = new HttpClient(async (path, init) => app.request(path, init));
    const controlApi = async (path: string) => (await app.request(`/_sandbox${path}`)).json() as Promise<Record<string, string>[]>;
    const created = await app.request("/_sandbox/users", {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ handle: "linda", name: "Linda", password: PASSWORD, challenge: "magic_link" }),
    });
    expect(created.status).toBe(201);

    await signIn(client, "linda");
    const { csrf } = await client.page("/login/challenge");
    expect((await client.postForm("/login/challenge", { _csrf: csrf, remember: "1" })).status).toBe(200);
    const [first] = await controlApi("/outbox?to=linda");
    expect(first?.link).toMatch(/^http:\/\/sandbox\.test\/sign-in\/link\//);
    now += 10 * 60_000 + 1_000;
    const late = await client.page(new URL(String(first?.link)).pathname);
    expect(late.body).toContain("This sign-in link has expired");
    expect((await client.request("/feed")).status).toBe(302);

    expect((await client.page("/login/challenge")).body).toContain("Check your email for a sign-in link");
    expect((await client.postForm("/login/challenge/resend", { _csrf: csrf })).status).toBe(200);
    const [second] = await controlApi("/outbox?to=linda");
    expect(second?.link).not.toBe(first?.link);
    expect((await client.request(new URL(String(second?.link)).pathname)).headers.get("location")).toBe("/feed");

    // Remembered: the next sign-in in this browser skips the link.
    const { csrf: signedInCsrf } = await client.page("/feed");
    await client.postForm("/logout", { _csrf: signedInCsrf });
    expect((await signIn(client, "linda")).headers.get("location")).toBe("/feed");
  });
});
