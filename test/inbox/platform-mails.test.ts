import { readFileSync } from "node:fs";
import { simpleParser } from "mailparser";
import { describe, expect, it } from "vitest";
import { findInMessage } from "../../src/domain/inbox.js";
import { mailText } from "../../src/inbox/smtp.js";
import { INBOX as GHOST_INBOX } from "../../src/platforms/ghost/pages.js";

// Real platforms' mails as the SMTP listener reads them. fixtures/ghost-sign-in.eml is the mail a
// Ghost 6.65 site sent for a new device (caught on this machine): HTML only, base64.
async function readMail(name: string): Promise<string> {
  const raw = readFileSync(new URL(`./fixtures/${name}`, import.meta.url));
  return mailText(await simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true }));
}

describe("platforms' real mails", () => {
  it("Ghost's sign-in mail: the driver's pattern finds the code", async () => {
    const text = await readMail("ghost-sign-in.eml");
    expect(text).toMatch(/^089842 is your Ghost sign in verification code\n/);
    expect(findInMessage(text, GHOST_INBOX)).toEqual({ code: "089842" });
  });

  // The logo's address ("…/ghost-orb-1.png", beside "Here's your code") is no code.
  it("Ghost's sign-in mail: the generic rule alone finds the code too", async () => {
    expect(findInMessage(await readMail("ghost-sign-in.eml"), undefined)).toEqual({ code: "089842" });
  });
});
