/** Codes that arrive by themselves (DESIGN §15): the SMTP listener (with its DKIM check) and the SMS URL. Pushed messages and the matching are the engine's (`engine/inbox/`). */
import type { Engine } from "../engine/engine.js";
import type { MailListener, MailListenerOptions } from "./smtp.js";

export type { MailListener, MailListenerOptions } from "./smtp.js";
export { mountSmsUrl } from "./sms.js";
export { dnsResolver, withTxtRecords, type TxtResolver } from "./dns.js";

/**
 * Starts the SMTP listener (`smtp.ts`). Its mail parser, SMTP server and DKIM check are loaded
 * here, by a service configured to listen for mail, not by every start: they are about a third of
 * a start-up's imports.
 */
export async function startMailListener(engine: Engine, options: MailListenerOptions): Promise<MailListener> {
  const smtp = await import("./smtp.js");
  return smtp.startMailListener(engine, options);
}
