import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import nodemailer, { type SendMailOptions } from "nodemailer";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { silentLogger } from "../../src/engine/logger.js";
import { startMailListener, type MailListener, type MailListenerOptions } from "../../src/inbox/smtp.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { RawSmtp } from "../helpers/raw-smtp.js";

// The inbox's SMTP listener as an MX (DESIGN §15), over real sockets against a real engine:
// STARTTLS, the refusal to start in plaintext on a public address, the connection cap, the
// session, DATA and idle deadlines, the cap on refused recipients, the From cut.

const UNKNOWN = `${"0".repeat(32)}@inbox.localhost`;
let harness: Harness;
let certDir: string;
/** A self-signed certificate for localhost / 127.0.0.1 and its key, and a second key it does not fit. */
let pem: { certFile: string; keyFile: string; otherKeyFile: string; cert: Buffer; key: Buffer };
let listener: MailListener | undefined;
/** Raw sessions a test opened, closed after it even when it fails (else closing the listener waits 30 s for them). */
const opened: RawSmtp[] = [];

beforeAll(async () => {
  harness = await createHarness({ engine: { inbox: { mailDomain: "inbox.localhost", smtpOn: true } } });
  certDir = mkdtempSync(join(tmpdir(), "smtp-tls-"));
  const [certFile, keyFile, otherKeyFile] = ["cert.pem", "key.pem", "other-key.pem"].map((name) => join(certDir, name)) as [string, string, string];
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", keyFile, "-out", certFile], { stdio: "ignore" });
  execFileSync("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", otherKeyFile], { stdio: "ignore" });
  pem = { certFile, keyFile, otherKeyFile, cert: readFileSync(certFile), key: readFileSync(keyFile) };
}, 60_000);

afterEach(async () => {
  for (const client of opened.splice(0)) client.close();
  await listener?.close();
  listener = undefined;
});

afterAll(async () => {
  await harness?.destroy();
  rmSync(certDir, { recursive: true, force: true });
});

async function listen(options: Partial<MailListenerOptions> = {}): Promise<number> {
  listener = await startMailListener(harness.engine, { host: "127.0.0.1", port: 0, logger: silentLogger, ...options });
  return listener.port;
}

async function open(port: number): Promise<{ client: RawSmtp; greeting: string }> {
  const session = await RawSmtp.open(port);
  opened.push(session.client);
  return session;
}

/** A new account and its inbox address. */
async function inboxAccount(): Promise<{ accountId: string; email: string }> {
  const created = await harness.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: `user-${Math.random().toString(36).slice(2)}`, password: "pw-123456" } });
  expect(created.status).toBe(201);
  return { accountId: created.json.id, email: created.json.inbox.email };
}

async function messages(accountId: string): Promise<{ from?: string }[]> {
  return (await harness.request("GET", `/v1/accounts/${accountId}/messages`)).json.data;
}

/** Sends one mail with nodemailer; the SMTP reply code of a refusal, or 250. */
async function send(port: number, mail: SendMailOptions, transport: object = { ignoreTLS: true }): Promise<number> {
  const mailer = nodemailer.createTransport({ host: "127.0.0.1", port, secure: false, ...transport });
  try {
    await mailer.sendMail(mail);
    return 250;
  } catch (error) {
    return (error as { responseCode?: number }).responseCode ?? -1;
  } finally {
    mailer.close();
  }
}

describe("STARTTLS", () => {
  it("with a certificate, STARTTLS is offered and a mail sent over TLS is received", async () => {
    const port = await listen({ tls: { cert: pem.cert, key: pem.key } });
    const { client } = await open(port);
    expect(await client.command("EHLO test.example")).toMatch(/^250-.*STARTTLS/ms);
    client.close();
    const { accountId, email } = await inboxAccount();
    // requireTLS: the mail is not sent at all unless the session is upgraded; ca: the certificate is checked.
    expect(await send(port, { from: "someone@example.com", to: email, subject: "hello", text: "Your verification code is 482913" }, { requireTLS: true, tls: { ca: pem.cert } })).toBe(250);
    expect(await messages(accountId)).toHaveLength(1);
  });

  it("without one (loopback), STARTTLS is not offered and plaintext mail is received", async () => {
    const port = await listen();
    const { client } = await open(port);
    expect(await client.command("EHLO test.example")).not.toMatch(/STARTTLS/);
    client.close();
    const { accountId, email } = await inboxAccount();
    expect(await send(port, { from: "someone@example.com", to: email, text: "code 123456" })).toBe(250);
    expect(await messages(accountId)).toHaveLength(1);
  });

  it("a listener on a non-loopback address without a certificate refuses to start, unless plaintext is allowed", async () => {
    await expect(startMailListener(harness.engine, { host: "0.0.0.0", port: 0, logger: silentLogger })).rejects.toThrow(/needs TLS: set ACTION_SERVICE_SMTP_TLS_CERT and ACTION_SERVICE_SMTP_TLS_KEY .* or ACTION_SERVICE_SMTP_ALLOW_PLAINTEXT=true/);
    const smtp = (env: Record<string, string>) => loadConfig({ ACTION_SERVICE_SMTP_PORT: "2525", ...env }).smtp;
    expect(() => smtp({ ACTION_SERVICE_SMTP_HOST: "0.0.0.0" })).toThrow(ConfigError);
    expect(() => smtp({ ACTION_SERVICE_SMTP_HOST: "203.0.113.7" })).toThrow(/ACTION_SERVICE_SMTP_HOST="203.0.113.7": an SMTP listener on 203.0.113.7 .* needs TLS/);
    expect(smtp({ ACTION_SERVICE_SMTP_HOST: "0.0.0.0", ACTION_SERVICE_SMTP_ALLOW_PLAINTEXT: "true" })).toMatchObject({ host: "0.0.0.0", tls: undefined, allowPlaintext: true });
    expect(smtp({ ACTION_SERVICE_SMTP_HOST: "0.0.0.0", ACTION_SERVICE_SMTP_TLS_CERT: pem.certFile, ACTION_SERVICE_SMTP_TLS_KEY: pem.keyFile }).tls).toEqual({ cert: pem.cert, key: pem.key });
    for (const host of ["127.0.0.1", "::1", "localhost"]) expect(smtp({ ACTION_SERVICE_SMTP_HOST: host }).tls).toBeUndefined();
    // The listener off: nothing to refuse.
    expect(loadConfig({ ACTION_SERVICE_SMTP_HOST: "0.0.0.0" }).smtp.port).toBeUndefined();
  });

  it("a certificate without its key, an unreadable file, or a key that does not fit is a clear error that never shows the key", () => {
    const smtp = (env: Record<string, string>) => () => loadConfig({ ACTION_SERVICE_SMTP_PORT: "2525", ...env });
    expect(smtp({ ACTION_SERVICE_SMTP_TLS_CERT: pem.certFile })).toThrow(/ACTION_SERVICE_SMTP_TLS_CERT and ACTION_SERVICE_SMTP_TLS_KEY: give both/);
    expect(smtp({ ACTION_SERVICE_SMTP_TLS_KEY: pem.keyFile })).toThrow(/give both/);
    expect(smtp({ ACTION_SERVICE_SMTP_TLS_CERT: pem.certFile, ACTION_SERVICE_SMTP_TLS_KEY: join(certDir, "missing.pem") })).toThrow(/ACTION_SERVICE_SMTP_TLS_KEY=".*missing.pem": cannot be read \(ENOENT\)/);
    let mismatch: Error | undefined;
    try {
      smtp({ ACTION_SERVICE_SMTP_TLS_CERT: pem.certFile, ACTION_SERVICE_SMTP_TLS_KEY: pem.otherKeyFile })();
    } catch (error) {
      mismatch = error as Error;
    }
    expect(mismatch?.message).toMatch(/not a PEM certificate and its private key/);
    const keyBody = readFileSync(pem.otherKeyFile, "utf8").split("\n")[1]!;
    expect(mismatch?.message).not.toContain(keyBody);
  });
});

describe("limits", () => {
  it("a connection past the cap is answered 421 and closed", async () => {
    const port = await listen({ maxConnections: 2 });
    const [first, second] = [await open(port), await open(port)];
    expect([first.greeting, second.greeting]).toEqual([expect.stringMatching(/^220 /), expect.stringMatching(/^220 /)]);
    const third = await open(port);
    expect(third.greeting).toMatch(/^421 .*Too many connected clients/);
    await third.client.closed;
  });

  it("a session kept busy with NOOPs still ends at its deadline (421)", async () => {
    const port = await listen({ sessionMs: 1_500 });
    const { client } = await open(port);
    expect(await client.command("EHLO test.example")).toMatch(/^250/);
    let ended: string | undefined;
    // A NOOP every 200 ms, far inside the idle timeout: only the session deadline can end this.
    for (let i = 0; i < 100 && !ended; i++) {
      const answer = await client.command("NOOP");
      if (answer.startsWith("421")) ended = answer;
      else await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(ended).toMatch(/^421 .*session has lasted too long/);
    await client.closed;
  }, 30_000);

  it("a DATA phase that trickles past its deadline is ended (421) and nothing is kept", async () => {
    const port = await listen({ dataMs: 1_000 });
    const { accountId, email } = await inboxAccount();
    const { client } = await open(port);
    await client.command("EHLO test.example");
    expect(await client.command("MAIL FROM:<someone@example.com>")).toMatch(/^250/);
    expect(await client.command(`RCPT TO:<${email}>`)).toMatch(/^250/);
    expect(await client.command("DATA")).toMatch(/^354/);
    const trickle = setInterval(() => client.write("Your verification code is 482913"), 200);
    try {
      expect(await client.reply()).toMatch(/^421 .*message took too long/);
      await client.closed;
    } finally {
      clearInterval(trickle);
    }
    expect(await messages(accountId)).toHaveLength(0);
  }, 30_000);

  it("a client that says nothing is closed at the idle timeout (421)", async () => {
    const port = await listen({ idleMs: 500 });
    const { client } = await open(port);
    expect(await client.reply()).toMatch(/^421 .*Timeout/);
    await client.closed;
  });

  it("after the cap of refused recipients, the next RCPT is answered 421 and the session closed", async () => {
    const port = await listen({ maxRefusedRecipients: 3 });
    const { email } = await inboxAccount();
    const { client } = await open(port);
    await client.command("EHLO test.example");
    await client.command("MAIL FROM:<someone@example.com>");
    for (let i = 0; i < 3; i++) expect(await client.command(`RCPT TO:<${i}${UNKNOWN.slice(1)}>`)).toMatch(/^550 /);
    // A recipient that exists is refused too: the session is over.
    expect(await client.command(`RCPT TO:<${email}>`)).toMatch(/^421 .*Too many unknown recipients/);
    await client.closed;
  });

  it("the per-sender rate limit still answers 451 past its count", async () => {
    const port = await listen({ mailsPerMinute: 2 });
    const { email } = await inboxAccount();
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push(await send(port, { from: "someone@example.com", to: email, text: `code 12345${i}` }));
    expect(codes).toEqual([250, 250, 451]);
  });

  it("a From of 100,000 characters is kept cut to 1,000", async () => {
    const port = await listen();
    const { accountId, email } = await inboxAccount();
    expect(await send(port, { from: { name: "A".repeat(100_000), address: "someone@example.com" }, to: email, text: "code 123456" })).toBe(250);
    const [kept] = await messages(accountId);
    expect(kept!.from).toMatch(/^"?AAAA/);
    expect(kept!.from!.length).toBe(1_000);
  });
});
