/** Codes that arrive by themselves (DESIGN §15): the SMTP listener (with its DKIM check) and the SMS URL. Pushed messages and the matching are the engine's (`engine/inbox/`). */
export { startMailListener, mailText, MAX_MAIL_BYTES, MAILS_PER_MINUTE, type MailListener, type MailListenerOptions } from "./smtp.js";
export { mountSmsUrl } from "./sms.js";
export { authenticatedDomains, dnsResolver, withTxtRecords, type TxtResolver } from "./dkim.js";
