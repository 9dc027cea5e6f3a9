import type { AddressInfo } from "node:net";
import { simpleParser, type ParsedMail } from "mailparser";
import { SMTPServer, type SMTPServerSession } from "smtp-server";
import type { Engine } from "../engine/engine.js";
import type { Logger } from "../engine/logger.js";
import { MAX_MESSAGE_CHARS } from "../engine/inbox/index.js";
import { authenticatedDomains, type TxtResolver } from "./dkim.js";

/** The largest mail taken: sign-in mails are a few kilobytes; a platform's HTML mail well under this. */
export const MAX_MAIL_BYTES = 512 * 1024;
/** Mails accepted from one address in a minute; past it the sender gets 451 and tries later. */
export const MAILS_PER_MINUTE = 120;
/** Recipients one mail may name. */
const MAX_RECIPIENTS = 10;

export interface MailListenerOptions {
  host: string;
  port: number;
  logger: Logger;
  maxBytes?: number;
  mailsPerMinute?: number;
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
 * stored for it; mails are bounded in size (552) and in rate per sending address (451, counted at
 * each mail's first inbox recipient). What a mail says is never logged.
 */
export async function startMailListener(engine: Engine, options: MailListenerOptions): Promise<MailListener> {
  const maxBytes = options.maxBytes ?? MAX_MAIL_BYTES;
  const limit = new SenderLimit(options.mailsPerMinute ?? MAILS_PER_MINUTE);
  /** The accounts each session's accepted recipients belong to. */
  const recipients = new WeakMap<SMTPServerSession, Set<string>>();
  const server = new SMTPServer({
    name: options.host === "127.0.0.1" ? "localhost" : options.host,
    banner: "action-service inbox",
    authOptional: true,
    disabledCommands: ["AUTH", "STARTTLS"],
    size: maxBytes,
    logger: false,
    onMailFrom(_address, session, callback) {
      recipients.set(session, new Set());
      callback();
    },
    onRcptTo(address, session, callback) {
      const accepted = recipients.get(session) ?? new Set<string>();
      if (accepted.size >= MAX_RECIPIENTS) return callback(reply(452, "4.5.3 Too many recipients."));
      engine.inbox.accountOfAddress(address.address).then(
        (accountId) => {
          if (!accountId) return callback(reply(550, "5.1.1 No such mailbox here."));
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
      const chunks: Buffer[] = [];
      let bytes = 0;
      // Past the bound the rest is read and dropped (the client is answered 552 at its end), never kept.
      stream.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes <= maxBytes) chunks.push(chunk);
      });
      stream.on("end", () => {
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
  server.on("error", (error) => options.logger.warn({ err: error }, "SMTP listener error"));
  await new Promise<void>((resolve, reject) => {
    server.server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.server.off("error", reject);
      resolve();
    });
  });
  const port = (server.server.address() as AddressInfo).port;
  options.logger.info({ host: options.host, port, domain: engine.inbox.mailDomain }, "inbox SMTP listener on");
  return {
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
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
    await engine.inbox.receive(accountId, { channel: "email", source: "smtp", from: mail.from?.text, text, authenticated });
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

/** Mails accepted per sending address in a sliding minute. */
class SenderLimit {
  readonly #taken = new Map<string, number[]>();

  constructor(private readonly perMinute: number) {}

  take(sender: string): boolean {
    const now = Date.now();
    const recent = (this.#taken.get(sender) ?? []).filter((at) => now - at < 60_000);
    if (recent.length >= this.perMinute) {
      this.#taken.set(sender, recent);
      return false;
    }
    recent.push(now);
    this.#taken.set(sender, recent);
    if (this.#taken.size > 10_000) this.#taken.clear();
    return true;
  }
}
