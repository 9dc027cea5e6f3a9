import { dkimSign } from "mailauth";
import nodemailer from "nodemailer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/engine/logger.js";
import { aligned } from "../../src/domain/inbox.js";
import { authenticatedDomains, MAX_SIGNATURES } from "../../src/inbox/dkim.js";
import { dnsResolver, type TxtResolver } from "../../src/inbox/dns.js";
import { startMailListener } from "../../src/inbox/index.js";
import { dkimRecord, generateDkimKey, type DkimKey } from "../../src/sandbox/dkim.js";
import { startLocalDns, type LocalDns } from "../helpers/dns.js";
import { createHarness } from "../helpers/harness.js";

// Who may answer (DESIGN §15): a mail vouches for the domains whose DKIM signature verifies and
// aligns with its From — checked against keys published on a real DNS server on 127.0.0.1.
let dns: LocalDns;
let resolver: TxtResolver;
/** Published as s1._domainkey.sandbox.localhost. */
let key: DkimKey;

beforeAll(async () => {
  dns = await startLocalDns();
  resolver = dnsResolver([dns.address]);
  key = generateDkimKey("s1");
  const record = dkimRecord(key);
  dns.set(record.name, record.value);
});

afterAll(async () => {
  await dns?.close();
});

interface Signing {
  domainName?: string;
  keys?: DkimKey[];
  skipFields?: string;
}

/** A mail as nodemailer writes it, signed with each key given (none: unsigned). */
async function mail(from: string, text: string, signing: Signing = {}): Promise<Buffer> {
  const keys = (signing.keys ?? []).map((signer) => ({ domainName: signing.domainName ?? "sandbox.localhost", keySelector: signer.selector, privateKey: signer.privateKey }));
  const transport = nodemailer.createTransport({
    streamTransport: true,
    buffer: true,
    ...(keys.length > 0 ? { dkim: { keys, ...(signing.skipFields ? { skipFields: signing.skipFields } : {}) } } : {}),
  });
  const sent = await transport.sendMail({ from, to: "0123456789abcdef0123456789abcdef@inbox.localhost", subject: "Your Sandbox Social code is 123456", text });
  return sent.message as Buffer;
}

const FROM = "Sandbox Social <no-reply@sandbox.localhost>";

describe("authenticatedDomains", () => {
  it("gives the signing domain of a mail signed with the published key", async () => {
    expect(await authenticatedDomains(await mail(FROM, "Your Sandbox Social sign-in code is 123456"), { resolver })).toEqual([]);
    expect(await authenticatedDomains(await mail(FROM, "Your Sandbox Social sign-in code is 123456", { keys: [key] }), { resolver })).toEqual(["sandbox.localhost"]);
    // Relaxed alignment: d= the parent of the From's domain, any case.
    expect(await authenticatedDomains(await mail("no-reply@Mail.Sandbox.Localhost", "code 123456", { keys: [key] }), { resolver })).toEqual(["sandbox.localhost"]);
  });

  it("nothing for a signature whose key is not published, or once it is withdrawn", async () => {
    const unpublished = generateDkimKey("s2");
    expect(await authenticatedDomains(await mail(FROM, "code 123456", { keys: [unpublished] }), { resolver })).toEqual([]);
    // The right selector, another key's record.
    const record = dkimRecord(unpublished);
    dns.set(record.name, dkimRecord(generateDkimKey("s2")).value);
    expect(await authenticatedDomains(await mail(FROM, "code 123456", { keys: [unpublished] }), { resolver })).toEqual([]);
    dns.set(record.name, record.value);
    expect(await authenticatedDomains(await mail(FROM, "code 123456", { keys: [unpublished] }), { resolver })).toEqual(["sandbox.localhost"]);
    dns.remove(record.name);
    expect(await authenticatedDomains(await mail(FROM, "code 123456", { keys: [unpublished] }), { resolver })).toEqual([]);
  });

  it("nothing for a mail altered after signing: its body, a second From, or a From left unsigned", async () => {
    const signed = await mail(FROM, "Your Sandbox Social sign-in code is 123456", { keys: [key] });
    expect(await authenticatedDomains(signed, { resolver })).toEqual(["sandbox.localhost"]);
    const altered = Buffer.from(signed.toString("latin1").replace("code is 123456", "code is 654321"), "latin1");
    expect(await authenticatedDomains(altered, { resolver })).toEqual([]);
    // A second From on top (one a mail may have, RFC 5322): which one a reader shows is anyone's guess, so neither vouches.
    expect(await authenticatedDomains(Buffer.concat([Buffer.from("From: security@sandbox.localhost\r\n"), signed]), { resolver })).toEqual([]);
    // RFC 6376 §5.4: a signature must cover From; one that does not vouches for nothing.
    expect(await authenticatedDomains(await mail(FROM, "code 123456", { keys: [key], skipFields: "from" }), { resolver })).toEqual([]);
  });

  it("nothing for a signature over part of the body (l=): text appended past it is unsigned", async () => {
    const plain = await mail(FROM, "Your Sandbox Social sign-in code is 123456");
    const body = plain.subarray(plain.indexOf("\r\n\r\n") + 4);
    const signer = { signingDomain: "sandbox.localhost", selector: key.selector, privateKey: key.privateKey };
    // mailauth reads its signers from signatureData (its types want the first one at the top too).
    const { signatures } = await dkimSign(plain, { ...signer, signatureData: [{ ...signer, maxBodyLength: body.length }] });
    const signed = Buffer.concat([Buffer.from(signatures), plain]);
    const appended = Buffer.concat([signed, Buffer.from("\r\nYour Sandbox Social sign-in code is 000000\r\n")]);
    expect(await authenticatedDomains(appended, { resolver })).toEqual([]);
  });

  it("nothing for a signature whose d= does not align with From, nor for a bare top-level domain", async () => {
    expect(await authenticatedDomains(await mail("no-reply@example.com", "code 123456", { keys: [key] }), { resolver })).toEqual([]);
    expect(await authenticatedDomains(await mail("no-reply@notsandbox.localhost", "code 123456", { keys: [key] }), { resolver })).toEqual([]);
    // d=localhost, its key published: every *.localhost From would align with it — not counted.
    const tld = generateDkimKey("s3");
    dns.set(`s3._domainkey.localhost`, dkimRecord(tld).value);
    expect(await authenticatedDomains(await mail(FROM, "code 123456", { domainName: "localhost", keys: [tld] }), { resolver })).toEqual([]);
    expect([aligned("sandbox.localhost", "a.b.sandbox.localhost"), aligned("a.sandbox.localhost", "sandbox.localhost"), aligned("localhost", "localhost")]).toEqual([true, true, false]);
  });

  it(`verifies at most ${MAX_SIGNATURES} signatures: a mail with more vouches for nothing`, async () => {
    expect(await authenticatedDomains(await mail(FROM, "code 123456", { keys: [generateDkimKey("s9"), key] }), { resolver })).toEqual(["sandbox.localhost"]);
    const many = Array.from({ length: MAX_SIGNATURES }, () => key);
    expect(await authenticatedDomains(await mail(FROM, "code 123456", { keys: many }), { resolver })).toEqual(["sandbox.localhost"]);
    expect(await authenticatedDomains(await mail(FROM, "code 123456", { keys: [...many, key] }), { resolver })).toEqual([]);
  });

  it("nothing, in bounded time, when the DNS server does not answer", async () => {
    const signed = await mail(FROM, "code 123456", { keys: [key] });
    dns.mute(true);
    try {
      const started = Date.now();
      expect(await authenticatedDomains(signed, { resolver: dnsResolver([dns.address]), timeoutMs: 500 })).toEqual([]);
      // The resolver alone would try for 2 + 4 s; the mail's deadline ends it at 0.5 s (bound with slack for a loaded machine).
      expect(Date.now() - started).toBeLessThan(4_000);
    } finally {
      dns.mute(false);
    }
    expect(await authenticatedDomains(signed, { resolver })).toEqual(["sandbox.localhost"]);
  }, 20_000);
});

describe("the SMTP listener", () => {
  it("gives each mail's inbox the domains that vouch for it: the signing domain for a signed mail, none unsigned; both are kept", async () => {
    const harness = await createHarness({ engine: { inbox: { mailDomain: "inbox.localhost", smtpOn: true } } });
    const listener = await startMailListener(harness.engine, { host: "127.0.0.1", port: 0, logger: silentLogger, dkimResolver: dnsResolver([dns.address]) });
    try {
      const created = await harness.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "carol", password: "sandbox-password" } });
      const { id: accountId, inbox } = created.json as { id: string; inbox: { email: string } };
      const received: { authenticated?: readonly string[] | undefined }[] = [];
      const { inbox: engineInbox } = harness.engine;
      const receive = engineInbox.receive.bind(engineInbox);
      engineInbox.receive = (account, message) => {
        received.push(message);
        return receive(account, message);
      };
      for (const keys of [[key], []]) {
        const transport = nodemailer.createTransport({ host: "127.0.0.1", port: listener.port, secure: false, ignoreTLS: true, ...(keys.length > 0 ? { dkim: { domainName: "sandbox.localhost", keySelector: key.selector, privateKey: key.privateKey } } : {}) });
        await transport.sendMail({ from: FROM, to: inbox.email, subject: "Your Sandbox Social code is 123456", text: "Your Sandbox Social sign-in code is 123456" });
        transport.close();
      }
      expect(received.map((message) => message.authenticated)).toEqual([["sandbox.localhost"], []]);
      expect((await harness.request("GET", `/v1/accounts/${accountId}/messages`)).json.data).toHaveLength(2);
    } finally {
      await listener.close();
      await harness.destroy();
    }
  });
});
