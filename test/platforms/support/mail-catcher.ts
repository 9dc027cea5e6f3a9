/**
 * A local SMTP server that accepts every message and keeps it: the platforms under test send
 * their sign-in codes here. Plain SMTP without TLS or AUTH, enough for nodemailer and PHP's
 * mailers; MIME is decoded as far as the tests read it (subject, text and HTML parts).
 */
import { createServer, type Socket } from "node:net";

/** One message as received. */
export interface CaughtMail {
  from: string;
  to: string[];
  subject: string;
  /** The text/plain part, or the HTML part with its tags stripped. */
  text: string;
  html: string | undefined;
  raw: string;
  receivedAt: Date;
}

/** A running catcher. */
export interface MailCatcher {
  port: number;
  /** Every message received, oldest first. */
  mails(): CaughtMail[];
  /** Resolves with the first message, received from now on or already kept, that `match` accepts. */
  waitFor(match: (mail: CaughtMail) => boolean, timeoutMs: number): Promise<CaughtMail>;
  close(): Promise<void>;
}

export async function startMailCatcher(): Promise<MailCatcher> {
  const mails: CaughtMail[] = [];
  const waiters = new Set<() => void>();
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    serveSession(socket, (mail) => {
      mails.push(mail);
      for (const wake of waiters) wake();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as { port: number };
  return {
    port,
    mails: () => [...mails],
    waitFor(match, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = mails.find(match);
          if (!found) return;
          finish();
          resolve(found);
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`no matching mail within ${timeoutMs} ms; received: ${mails.map((mail) => `"${mail.subject}" to ${mail.to.join(",")}`).join("; ") || "none"}`));
        }, timeoutMs);
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function serveSession(socket: Socket, deliver: (mail: CaughtMail) => void): void {
  let buffer = "";
  let from = "";
  let to: string[] = [];
  let data: string[] | undefined;
  const reply = (line: string) => socket.write(`${line}\r\n`);
  socket.setEncoding("utf8");
  socket.on("error", () => socket.destroy());
  reply("220 localhost ESMTP mail catcher");
  socket.on("data", (chunk: string) => {
    buffer += chunk;
    for (let end = buffer.indexOf("\r\n"); end >= 0; end = buffer.indexOf("\r\n")) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (data) {
        if (line !== ".") {
          data.push(line.startsWith("..") ? line.slice(1) : line);
          continue;
        }
        deliver(parseMessage(from, to, data.join("\r\n")));
        data = undefined;
        from = "";
        to = [];
        reply("250 OK: queued");
        continue;
      }
      switch (line.slice(0, 4).toUpperCase()) {
        case "EHLO":
          reply("250-localhost\r\n250-8BITMIME\r\n250 SMTPUTF8");
          break;
        case "HELO":
          reply("250 localhost");
          break;
        case "MAIL":
          from = address(line);
          reply("250 OK");
          break;
        case "RCPT":
          to.push(address(line));
          reply("250 OK");
          break;
        case "DATA":
          data = [];
          reply("354 End data with <CR><LF>.<CR><LF>");
          break;
        case "RSET":
          from = "";
          to = [];
          reply("250 OK");
          break;
        case "NOOP":
          reply("250 OK");
          break;
        case "QUIT":
          reply("221 Bye");
          socket.end();
          break;
        default:
          reply("502 Command not implemented");
      }
    }
  });
}

function address(line: string): string {
  return /<([^>]*)>/.exec(line)?.[1] ?? line.slice(line.indexOf(":") + 1).trim();
}

interface Part { headers: Map<string, string>; body: string }

function parseMessage(from: string, to: string[], raw: string): CaughtMail {
  const message = splitPart(raw);
  const leaves = flatten(message);
  const textPart = leaves.find((part) => contentType(part).startsWith("text/plain"));
  const htmlPart = leaves.find((part) => contentType(part).startsWith("text/html"));
  const html = htmlPart ? decodeBody(htmlPart) : undefined;
  return {
    from,
    to,
    subject: decodeWords(message.headers.get("subject") ?? ""),
    text: textPart ? decodeBody(textPart) : stripHtml(html ?? ""),
    html,
    raw,
    receivedAt: new Date(),
  };
}

function splitPart(raw: string): Part {
  const split = raw.search(/\r?\n\r?\n/);
  const head = split < 0 ? raw : raw.slice(0, split);
  const body = split < 0 ? "" : raw.slice(split).replace(/^\r?\n\r?\n/, "");
  const headers = new Map<string, string>();
  for (const field of head.replace(/\r?\n[ \t]+/g, " ").split(/\r?\n/)) {
    const colon = field.indexOf(":");
    if (colon > 0) headers.set(field.slice(0, colon).trim().toLowerCase(), field.slice(colon + 1).trim());
  }
  return { headers, body };
}

function contentType(part: Part): string {
  return (part.headers.get("content-type") ?? "text/plain").toLowerCase();
}

function flatten(part: Part): Part[] {
  const type = part.headers.get("content-type") ?? "";
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (!/^multipart\//i.test(type) || !boundary) return [part];
  const sections = part.body.split(`--${boundary}`).slice(1);
  return sections.filter((section) => !section.startsWith("--")).flatMap((section) => flatten(splitPart(section.replace(/^\r?\n/, ""))));
}

function decodeBody(part: Part): string {
  const encoding = (part.headers.get("content-transfer-encoding") ?? "").toLowerCase();
  if (encoding === "base64") return Buffer.from(part.body.replace(/\s+/g, ""), "base64").toString("utf8");
  if (encoding === "quoted-printable") return decodeQuotedPrintable(part.body);
  return part.body;
}

function decodeQuotedPrintable(text: string): string {
  const bytes = text.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/gi, (_, hex: string) => `%${hex}`);
  try {
    return decodeURIComponent(bytes.replace(/%(?![0-9A-F]{2})/gi, "%25"));
  } catch {
    return bytes;
  }
}

/** RFC 2047 encoded words (`=?UTF-8?Q?…?=`, `=?UTF-8?B?…?=`). */
function decodeWords(value: string): string {
  return value.replace(/\?=\s+=\?/g, "?==?").replace(/=\?([^?]+)\?([QB])\?([^?]*)\?=/gi, (_, _charset: string, kind: string, text: string) =>
    kind.toUpperCase() === "B" ? Buffer.from(text, "base64").toString("utf8") : decodeQuotedPrintable(text.replace(/_/g, " ")),
  );
}

function stripHtml(html: string): string {
  return html
    .replace(/<(style|script|head)[\s\S]*?<\/\1>/gi, " ")
    .replace(/<[^>]+>/g, " ")
    .replace(/&nbsp;/g, " ")
    .replace(/&amp;/g, "&")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&#39;|&apos;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/[ \t]+/g, " ")
    .replace(/\s*\n\s*/g, "\n")
    .trim();
}
