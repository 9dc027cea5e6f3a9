import type { AddressInfo } from "node:net";
import { simpleParser, type ParsedMail } from "mailparser";
import { SMTPServer, type SMTPServerSession } from "smtp-server";
import type { Engine } from "../engine/engine.js";
import type { Logger } from "../engine/logger.js";
import { MAX_MESSAGE_CHARS } from "../engine/inbox/index.js";
import { SENDERS_REMEMBERED, SenderLimit } from "./sender-limit.js";
import { SessionDeadlines } from "./smtp-sessions.js";
import { plaintextRefusal, type SmtpTls } from "./smtp-tls.js";
import { authenticatedDomains } from "./dkim.js";
import type { TxtResolver } from "./dns.js";

/** The largest mail taken: sign-in mails are a few kilobytes; a platform's HTML mail well under this. */
export const MAX_MAIL_BYTES = 512 * 1024;
/** Mails accepted from one sender (an IPv4 address, an IPv6 /64) in a minute; past it the sender gets 451 and tries later. */
export const MAILS_PER_MINUTE = 120;
/** Connections open at once; one more is answered 421 (a sending server tries again later). */
export const MAX_CONNECTIONS = 100;
/** How long one session may last, however busy: delivering a sign-in mail takes seconds. */
export const SESSION_MS = 5 * 60_000;
/** How long a message may take to arrive once DATA began: 512 KB in two minutes is 4 KB/s. */
export const DATA_MS = 2 * 60_000;
/** How long a client may say nothing before it is answered 421 and closed. */
export const IDLE_MS = 60_000;
/** Recipients refused (550) in one session before the session is ended: a sender may not probe addresses without end. */
export const MAX_REFUSED_RECIPIENTS = 5;
/** The longest `From` kept: a real one is well under a hundred characters; it is stored and listed. */
export const MAX_FROM_CHARS = 1_000;
/** Recipients one mail may name. */
const MAX_RECIPIENTS = 10;

/** Where and how the listener listens; every limit has a default (tests make them small). */
export interface MailListenerOptions {
  host: string;
  port: number;
  logger: Logger;
  /** STARTTLS's certificate and key; without them STARTTLS is not offered. */
  tls?: SmtpTls | undefined;
  /** Plaintext only on a non-loopback address (`ACTION_SERVICE_SMTP_ALLOW_PLAINTEXT`); without it, and without `tls`, the listener refuses to start there. */
  allowPlaintext?: boolean;
  maxBytes?: number;
  mailsPerMinute?: number;
  /** Senders the rate limit remembers at most (the least recently heard is forgotten first). */
  sendersRemembered?: number;
  maxConnections?: number;
  sessionMs?: number;
  dataMs?: number;
  idleMs?: number;
  maxRefusedRecipients?: number;
  /** Where mails' DKIM keys are looked up (default: DNS through the system's resolver). */
  dkimResolver?: TxtResolver | undefined;
}

export interface MailListener {
  /** The port it listens on (the one chosen when 0 was asked for). */
  port: number;
  close(): Promise<void>;
}

/** An SMTP reply with its code. */
function reply(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code });
}

/**
 * The inbox's SMTP listener (DESIGN §15): where mail for the accounts' inbox addresses is
 * delivered, like an MX. Needs no login and relays nothing: a recipient that is not an inbox
 * address of an account is refused at `RCPT TO` (550), before any message is read, so nothing is
 * stored for it; mails are bounded in size (552) and in rate per sender (451, counted at each
 * mail's first inbox recipient). As it faces the world: STARTTLS when given a certificate (and no
 * start without one on a public address unless plaintext is allowed), bounded connections,
 * session, DATA and idle deadlines, and a bounded count of refused recipients (421 past each).
 * What a mail says is never logged.
 */
export async function startMailListener(engine: Engine, options: MailListenerOptions): Promise<MailListener> {
  const refusal = plaintextRefusal(options.host, options.tls, options.allowPlaintext ?? false);
  if (refusal) throw new Error(`The inbox's SMTP listener cannot start: ${refusal}.`);
  const maxBytes = options.maxBytes ?? MAX_MAIL_BYTES;
  const maxRefused = options.maxRefusedRecipients ?? MAX_REFUSED_RECIPIENTS;
  const limit = new SenderLimit(options.mailsPerMinute ?? MAILS_PER_MINUTE, options.sendersRemembered ?? SENDERS_REMEMBERED);
  /** The accounts each session's accepted recipients belong to. */
  const recipients = new WeakMap<SMTPServerSession, Set<string>>();
  /** Recipients each session has had refused, all its mails together. */
  const refused = new WeakMap<SMTPServerSession, number>();
  const server: SMTPServer = new SMTPServer({
    name: options.host === "127.0.0.1" ? "localhost" : options.host,
    banner: "action-service inbox",
    authOptional: true,
    // Without a certificate of its own smtp-server would offer STARTTLS with a published test key.
    disabledCommands: options.tls ? ["AUTH"] : ["AUTH", "STARTTLS"],
    ...(options.tls ? { key: options.tls.key, cert: options.tls.cert } : {}),
    size: maxBytes,
    maxClients: options.maxConnections ?? MAX_CONNECTIONS,
    socketTimeout: options.idleMs ?? IDLE_MS,
    logger: false,
    // The client's reverse DNS name is used for nothing here; looking it up cost each connection up to 1.5 s.
    disableReverseLookup: true,
    onConnect(session, callback) {
      deadlines.opened(session);
      callback();
    },
    onClose(session) {
      deadlines.closed(session);
    },
    onMailFrom(_address, session, callback) {
      recipients.set(session, new Set());
      callback();
    },
    onRcptTo(address, session, callback) {
      if ((refused.get(session) ?? 0) >= maxRefused) return callback(reply(421, "4.7.0 Too many unknown recipients; closing."));
      const accepted = recipients.get(session) ?? new Set<string>();
      if (accepted.size >= MAX_RECIPIENTS) return callback(reply(452, "4.5.3 Too many recipients."));
      engine.inbox.accountOfAddress(address.address).then(
        (accountId) => {
          if (!accountId) {
            refused.set(session, (refused.get(session) ?? 0) + 1);
            return callback(reply(550, "5.1.1 No such mailbox here."));
          }
          // Counted at a mail's first inbox recipient: mail refused at RCPT TO costs a sender nothing here.
          if (accepted.size === 0 && !limit.take(session.remoteAddress)) return callback(reply(451, "4.7.1 Too many mails from this address; try again later."));
          accepted.add(accountId);
          recipients.set(session, accepted);
          callback();
        },
        (error: unknown) => {
          options.logger.warn({ err: error }, "the inbox could not look up a recipient");
          callback(reply(451, "4.3.0 Try again later."));
        },
      );
    },
    onData(stream, session, callback) {
      const arrived = deadlines.dataStarted(session);
      const chunks: Buffer[] = [];
      let bytes = 0;
      // Past the bound the rest is read and dropped (the client is answered 552 at its end), never kept.
      stream.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes <= maxBytes) chunks.push(chunk);
      });
      // The connection closed mid-message (the client left, or a deadline ended it): nothing is kept.
      stream.on("error", arrived);
      stream.on("end", () => {
        arrived();
        if (bytes > maxBytes || (stream as unknown as { sizeExceeded?: boolean }).sizeExceeded) return callback(reply(552, `5.3.4 A mail may be at most ${maxBytes} bytes.`));
        const accounts = [...(recipients.get(session) ?? [])];
        deliver(engine, Buffer.concat(chunks), accounts, options.dkimResolver).then(
          () => callback(),
          (error: unknown) => {
            options.logger.warn({ err: error, accounts: accounts.length }, "the inbox could not keep a mail");
            callback(reply(451, "4.3.0 Try again later."));
          },
        );
      });
    },
  });
  const deadlines = new SessionDeadlines(server, { sessionMs: options.sessionMs ?? SESSION_MS, dataMs: options.dataMs ?? DATA_MS });
  server.on("error", (error) => options.logger.warn({ err: error }, "SMTP listener error"));
  await new Promise<void>((resolve, reject) => {
    server.server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.server.off("error", reject);
      resolve();
    });
  });
  const port = (server.server.address() as AddressInfo).port;
  options.logger.info({ host: options.host, port, domain: engine.inbox.mailDomain, starttls: options.tls !== undefined }, "inbox SMTP listener on");
  return {
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A `From` of at most MAX_FROM_CHARS, never ending in half a surrogate pair. */
export function cutFrom(from: string | undefined): string | undefined {
  if (from === undefined || from.length <= MAX_FROM_CHARS) return from;
  const cut = from.slice(0, MAX_FROM_CHARS);
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/**
 * Parses a mail and gives it to each recipient account's inbox, with the domains whose DKIM
 * signature vouches for its `From` (DESIGN §15 "Who may answer"; none when DNS fails or is slow —
 * the mail is kept all the same).
 */
async function deliver(engine: Engine, raw: Buffer, accounts: readonly string[], resolver: TxtResolver | undefined): Promise<void> {
  if (accounts.length === 0) return;
  const [mail, authenticated] = await Promise.all([simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true }), authenticatedDomains(raw, { resolver })]);
  const text = mailText(mail);
  for (const accountId of accounts) {
    await engine.inbox.receive(accountId, { channel: "email", source: "smtp", from: cutFrom(mail.from?.text), text, authenticated });
  }
}

/**
 * What the inbox reads of a mail: its subject, its text, and the links of its HTML written out
 * (a sign-in link may be only an `href`).
 */
export function mailText(mail: Pick<ParsedMail, "subject" | "text" | "html">): string {
  const links = typeof mail.html === "string" ? [...mail.html.matchAll(/href\s*=\s*["']([^"']+)["']/gi)].map((match) => decodeEntities(match[1]!)) : [];
  return [mail.subject ?? "", mail.text ?? "", ...links].join("\n").slice(0, MAX_MESSAGE_CHARS);
}

function decodeEntities(value: string): string {
  return value.replace(/&amp;/g, "&").replace(/&#x2F;/gi, "/").replace(/&#47;/g, "/");
}
