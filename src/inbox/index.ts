/** Codes that arrive by themselves (DESIGN §15): the SMTP listener and the SMS URL. Pushed messages and the matching are the engine's (`engine/inbox/`). */
export { startMailListener, mailText, MAX_MAIL_BYTES, MAILS_PER_MINUTE, type MailListener, type MailListenerOptions } from "./smtp.js";
export { mountSmsUrl } from "./sms.js";
