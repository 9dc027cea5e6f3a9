import nodemailer from "nodemailer";
import { SANDBOX_MAIL_DOMAIN, type DkimKey } from "./dkim.js";

/** The sender of the sandbox's mails, as a platform's no-reply address reads. */
export const MAIL_FROM = `Sandbox Social <no-reply@${SANDBOX_MAIL_DOMAIN}>`;
/** The number the sandbox's texts come from (a 555-01xx number, reserved for fiction). */
export const SMS_FROM = "+15550100";
/** How long posting one text to a user's `sms_url` may take. */
const SMS_TIMEOUT_MS = 5_000;

/** A mail the sandbox sends to a user's address. */
export interface OutgoingMail { to: string; subject: string; text: string }

/**
 * How the sandbox's codes and links leave it, like a platform's (DESIGN §15): mailed over SMTP and
 * texted to a user's `sms_url`. Both go in the background: a slow or refusing mail server or
 * gateway never holds up or fails the page that sent them (the outbox keeps the message anyway).
 */
export interface Courier {
  mail(message: OutgoingMail): void;
  text(url: string, text: string): void;
}

export interface CourierOptions {
  /** `smtp://host:port`: where mails go (plain SMTP, no login, no TLS); unset, nothing is mailed. */
  smtpUrl?: string | undefined;
  /** Signs each mail with DKIM for sandbox.localhost, as a platform does; unset, mails go unsigned. */
  dkim?: DkimKey | undefined;
  /** Called with each mail or text that could not be delivered (default: ignored). */
  onFailure?: ((error: unknown, channel: "email" | "sms") => void) | undefined;
}

export function createCourier(options: CourierOptions = {}): Courier {
  const failed = (channel: "email" | "sms") => (error: unknown) => options.onFailure?.(error, channel);
  const transport = options.smtpUrl === undefined ? undefined : smtpTransport(options.smtpUrl, options.dkim);
  return {
    mail(message) {
      if (!transport) return;
      transport.sendMail({ from: MAIL_FROM, ...message }).catch(failed("email"));
    },
    text(url, text) {
      fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ from: SMS_FROM, text }),
        signal: AbortSignal.timeout(SMS_TIMEOUT_MS),
      })
        .then(async (response) => {
          await response.body?.cancel();
          if (!response.ok) throw new Error(`${new URL(url).origin} answered the text with HTTP ${response.status}`);
        })
        .catch(failed("sms"));
    },
  };
}

function smtpTransport(smtpUrl: string, dkim: DkimKey | undefined) {
  const url = new URL(smtpUrl);
  return nodemailer.createTransport({
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port === "" ? 25 : Number(url.port),
    secure: false,
    ignoreTLS: true,
    ...(dkim ? { dkim: { domainName: SANDBOX_MAIL_DOMAIN, keySelector: dkim.selector, privateKey: dkim.privateKey } } : {}),
  });
}
