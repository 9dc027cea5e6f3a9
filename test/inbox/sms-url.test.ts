import { connect } from "node:net";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/api/app.js";
import { REDACT_PATHS } from "../../src/engine/logger.js";
import { mountSmsUrl, type SmsUrlOptions } from "../../src/inbox/sms.js";
import { listen } from "../../src/main.js";
import { Sealer } from "../../src/store/crypto.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { rows, sql } from "../helpers/sql.js";

// The SMS URL (DESIGN §15) as a gateway meets it: bytes over a real socket on 127.0.0.1, to the
// REST app with the SMS URL mounted as the service mounts it, on a real SQLite file. Only the
// clock is the test's (to refill a rate limit without waiting).
let h: Harness;
/** Every line the service logged, as written. */
const logged: string[] = [];
const logger = pino({ level: "debug", redact: { paths: REDACT_PATHS, censor: "[redacted]" } }, { write: (line: string) => void logged.push(line) });
const servers: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  h = await createHarness();
});

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

afterAll(async () => {
  await h?.destroy();
});

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The service's HTTP app with the SMS URL mounted with `options`, on a free port; resolves to a sender of raw requests. */
async function serveSmsUrl(options: SmsUrlOptions = {}): Promise<(method: string, path: string, contentType: string | undefined, body?: string | Buffer) => Promise<RawResponse>> {
  const app = createApp({ engine: h.engine, clock: h.clock, logger, extend: (app) => mountSmsUrl(app, h.engine, options) });
  const server = await listen(app, "127.0.0.1", 0);
  servers.push(server);
  return (method, path, contentType, body = "") => raw(server.port, method, path, contentType, Buffer.from(body));
}

/** One HTTP/1.1 request written byte for byte, and its response read to the connection's close. */
function raw(port: number, method: string, path: string, contentType: string | undefined, body: Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const [head = "", ...rest] = text.split("\r\n\r\n");
      const [statusLine = "", ...headerLines] = head.split("\r\n");
      const headers = Object.fromEntries(headerLines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
      resolve({ status: Number(statusLine.split(" ")[1]), headers, body: rest.join("\r\n\r\n") });
    });
    const type = contentType === undefined ? "" : `Content-Type: ${contentType}\r\n`;
    socket.write(`${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${type}Content-Length: ${body.length}\r\n\r\n`);
    socket.end(body);
  });
}

let accounts = 0;
/** A new account and its SMS URL's path and token. */
async function inbox(): Promise<{ accountId: string; path: string; token: string }> {
  const created = await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: `texted-${++accounts}`, password: "pw-123456" } });
  expect(created.status).toBe(201);
  const { sms } = await h.store.inbox.tokens(created.json.id, h.clock.now().toISOString());
  return { accountId: created.json.id, path: `/inbound/sms/${sms}`, token: sms };
}

/** The account's texts as kept, opened with the service's key, sorted: the fake clock gives them one time. */
async function texts(accountId: string): Promise<string[]> {
  const kept = await rows<{ id: string; body_sealed: Buffer }>(h.store, sql`SELECT id, body_sealed FROM inbox_messages WHERE account_id = ${accountId} AND channel = 'sms'`);
  const sealer = new Sealer(h.masterKey);
  return kept.map((row) => sealer.open(Buffer.from(row.body_sealed), `message:${row.id}:body`)).sort();
}

const json = (text: string): string => JSON.stringify({ from: "+15550100", text });

describe("the SMS URL's rate limit", () => {
  it("past its burst an inbox's URL is 429 with Retry-After in the request-error shape, and keeps nothing; other inboxes still take texts; a refilled bucket takes one again", async () => {
    const send = await serveSmsUrl({ textsPerMinute: 6, burst: 3 });
    const [a, b] = [await inbox(), await inbox()];
    for (let i = 0; i < 3; i++) expect((await send("POST", a.path, "application/json", json(`code ${i}`))).status).toBe(202);
    const refused = await send("POST", a.path, "application/json", json("code 3"));
    expect(refused.status).toBe(429);
    // 6 a minute: one every 10 s.
    expect(refused.headers["retry-after"]).toBe("10");
    expect(JSON.parse(refused.body)).toEqual({ error: { code: "too_many_requests", message: expect.any(String), details: { retry_after: 10 } } });
    expect(await texts(a.accountId)).toEqual(["code 0", "code 1", "code 2"]);
    expect((await send("POST", b.path, "application/json", json("code for b"))).status).toBe(202);
    h.clock.advance(9_000);
    expect((await send("POST", a.path, "application/json", json("too soon"))).headers["retry-after"]).toBe("1");
    h.clock.advance(1_000);
    expect((await send("POST", a.path, "application/json", json("code 4"))).status).toBe(202);
  });

  it("the counts are a bounded table: the least recently texted inbox is forgotten first, never all at once; unknown tokens take no place in it", async () => {
    const send = await serveSmsUrl({ textsPerMinute: 1, burst: 2, trackedInboxes: 2 });
    const [c, d, e] = [await inbox(), await inbox(), await inbox()];
    const status = async (path: string): Promise<number> => (await send("POST", path, "application/json", json("code 123456"))).status;
    for (const { path } of [c, d]) expect([await status(path), await status(path), await status(path)]).toEqual([202, 202, 429]);
    for (let i = 0; i < 20; i++) expect(await status(`/inbound/sms/unknown${i}`)).toBe(404);
    // Still counted: the unknown tokens took nothing from the table. C is now the most recently texted.
    expect(await status(c.path)).toBe(429);
    expect(await status(e.path)).toBe(202);
    // E pushed out D (the least recently texted), not C and not everything.
    expect(await status(c.path)).toBe(429);
    expect(await status(d.path)).toBe(202);
  });
});

/** A multipart body with the fields given; `cut` drops its closing delimiter. */
function multipart(boundary: string, fields: Record<string, string>, cut = false): string {
  const parts = Object.entries(fields).map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  return parts.join("") + (cut ? "" : `--${boundary}--\r\n`);
}

describe("bodies", () => {
  const malformed: [string, string | undefined, string | Buffer][] = [
    ["multipart whose boundary is never found", "multipart/form-data; boundary=abc123", multipart("other", { Body: "code 123456" })],
    ["multipart without a boundary", "multipart/form-data", "Body=code+123456"],
    ["multipart cut short", "multipart/form-data; boundary=abc123", multipart("abc123", { Body: "code 123456" }, true)],
    ["a form with a % not followed by two hex digits", "application/x-www-form-urlencoded", "From=%2B15550100&Body=code%2G123456"],
    ["a form whose escaped bytes are not UTF-8", "application/x-www-form-urlencoded", "Body=code%FF123456"],
    ["JSON that does not parse", "application/json", '{"text": "code 123456"'],
    ["JSON whose bytes are not UTF-8", "application/json", Buffer.concat([Buffer.from('{"text": "code 123456 '), Buffer.from([0xff]), Buffer.from('"}')])],
    ["a charset nobody knows", "application/json; charset=x-no-such-charset", json("code 123456")],
    ["bytes that are not the charset named", "application/json; charset=utf-16le", '{"text":"code 12345"}'],
    ["no content type", undefined, json("code 123456")],
  ];
  for (const [name, contentType, body] of malformed) {
    it(`${name}: 400 malformed_request, nothing kept, nothing logged`, async () => {
      const send = await serveSmsUrl();
      const { accountId, path } = await inbox();
      const lines = logged.length;
      const response = await send("POST", path, contentType, body);
      expect({ status: response.status, code: JSON.parse(response.body).error.code }).toEqual({ status: 400, code: "malformed_request" });
      expect(await texts(accountId)).toEqual([]);
      expect(logged.slice(lines)).toEqual([]);
    });
  }

  it("JSON, a form, a multipart form and a form in ISO-8859-1 are each kept as the text sent", async () => {
    const send = await serveSmsUrl();
    const { accountId, path } = await inbox();
    expect((await send("POST", path, "application/json; charset=UTF-8", json("Código 111111"))).status).toBe(202);
    expect((await send("POST", path, "application/x-www-form-urlencoded", "From=%2B15550100&Body=C%C3%B3digo+222222+%26+more")).status).toBe(202);
    expect((await send("POST", path, "multipart/form-data; boundary=abc123", multipart("abc123", { From: "+15550100", Body: "Código 333333" }))).status).toBe(202);
    expect((await send("POST", path, "application/x-www-form-urlencoded; charset=ISO-8859-1", "Body=C%F3digo+444444")).status).toBe(202);
    expect(await texts(accountId)).toEqual(["Código 111111", "Código 222222 & more", "Código 333333", "Código 444444"]);
  });
});

describe("the SMS token is in no log line and no error", () => {
  it("a broken body, a refused text, a wrong method and a failure of ours: the token is nowhere; the failure is logged with the path redacted", async () => {
    const send = await serveSmsUrl({ textsPerMinute: 1, burst: 2 });
    const { path, token } = await inbox();
    const lines = logged.length;
    const responses = [await send("POST", path, "multipart/form-data; boundary=abc123", "--abc123\r\nbroken"), await send("GET", path, undefined)];
    // The database refuses the text: the inbox's receive throws.
    await sql`ALTER TABLE inbox_messages RENAME TO inbox_messages_away`.execute(h.store.adapter.db);
    try {
      responses.push(await send("POST", path, "application/json", json("code 123456")));
    } finally {
      await sql`ALTER TABLE inbox_messages_away RENAME TO inbox_messages`.execute(h.store.adapter.db);
    }
    responses.push(await send("POST", path, "application/json", json("code 123456")));
    expect(responses.map((response) => response.status)).toEqual([400, 404, 500, 429]);
    expect(JSON.parse(responses[1]!.body).error.message).toBe("No route GET /inbound/sms/[redacted].");
    const failures = logged.slice(lines).map((line) => JSON.parse(line) as { msg: string; path?: string; err?: { message: string } });
    expect(failures).toEqual([expect.objectContaining({ msg: "request failed", path: "/inbound/sms/[redacted]", err: expect.objectContaining({ message: expect.stringContaining("inbox_messages") }) })]);
    for (const text of [...logged, ...responses.map((response) => JSON.stringify(response))]) expect(text).not.toContain(token);
  });
});
