import type { Hono } from "hono";
import { html } from "hono/html";
import type { Principal } from "../../domain/keys.js";
import type { Engine } from "../../engine/engine.js";
import type { ListedMessage } from "../../engine/inbox/index.js";
import type { AccountRecord, ActionRecord } from "../../store/records.js";
import { readForm } from "../forms.js";
import { csrfField, status, table, time, typeTitle, type Html, type Viewer } from "../layout.js";
import { may, type WebEnv } from "../session.js";

const CHANNEL_WORDS: Record<ListedMessage["channel"], string> = { email: "e-mail", sms: "text" };
const SOURCE_WORDS: Record<ListedMessage["source"], string> = { smtp: "mailed", sms_url: "SMS URL", pushed: "pushed" };

/** The inbox's one form: replacing its address and SMS URL (admins). */
export function inboxRoutes(web: Hono<WebEnv>, engine: Engine): void {
  web.post("/accounts/:id/inbox/rotate", async (c) => {
    const { principal } = c.get("session");
    await readForm(c);
    const account = await engine.inbox.rotate(principal, c.req.param("id"));
    return c.redirect(`/app/accounts/${account.id}?done=rotated`, 303);
  });
}

/**
 * The account page's inbox (DESIGN §15): its address and SMS URL with copy buttons, to keys that
 * may see them; for admins, replacing them and the recent messages with what each was used for
 * (never their text).
 */
export async function inboxSection(engine: Engine, viewer: Viewer, principal: Principal, account: AccountRecord): Promise<Html> {
  const addresses = await engine.inbox.addressesFor(principal, account);
  if (!addresses) return html``;
  const admin = may(principal, "manage_accounts");
  const messages = admin ? await engine.inbox.list(principal, account.id) : [];
  // What each message answered, by the action's type and status (an action may have gone since).
  const answered = new Map<string, ActionRecord | undefined>();
  for (const id of new Set(messages.map((message) => message.used_for).filter((id): id is string => id !== undefined))) {
    answered.set(id, await engine.getAction(principal, id).catch(() => undefined));
  }
  return html`<section class="card spaced" aria-labelledby="inbox-title">
  <h2 id="inbox-title">Inbox</h2>
  <p class="note">Codes mailed or texted here answer this account's e-mail and text challenges by themselves. Set the address as the platform account's e-mail (or forward its mails to it), and have an SMS gateway or the phone's forwarding rule post each text to the SMS URL. Keep both private: anyone who has them can send to the inbox.</p>
  ${addresses.email
    ? copyable("inbox-email", "E-mail address", addresses.email, "Copy the address")
    : html`<p class="note" id="inbox-email-off">No e-mail address: this service's SMTP listener is off.</p>`}
  ${copyable("inbox-sms-url", "SMS URL", addresses.sms_url, "Copy the SMS URL")}
  ${admin
    ? html`<details class="spaced">
    <summary>Replace address and SMS URL…</summary>
    <form method="post" action="/app/accounts/${account.id}/inbox/rotate">
      ${csrfField(viewer)}
      <p class="note">The old address and SMS URL stop working at once: mail to the old address is refused, and the old SMS URL answers 404. Give the platform and any forwarding rule the new ones.</p>
      <button type="submit" class="danger">Replace address and SMS URL</button>
    </form>
  </details>
  <h3 class="spaced">Recent messages</h3>
  ${table({
    caption: "Messages this inbox received in the last 24 hours, newest first",
    rows: messages,
    empty: "No messages in the last 24 hours.",
    columns: [
      { title: "Received", cell: (message) => time(message.received_at) },
      { title: "Channel", cell: (message) => `${CHANNEL_WORDS[message.channel]} (${SOURCE_WORDS[message.source]})` },
      { title: "From", cell: (message) => message.from ?? html`<span class="note">unknown</span>` },
      { title: "Used for", cell: (message) => usedFor(message, answered) },
    ],
  })}
  <p class="note">Messages are kept sealed for 24 hours; their text is never shown.</p>`
    : ""}
</section>`;
}

function usedFor(message: ListedMessage, answered: Map<string, ActionRecord | undefined>): Html {
  if (!message.used_for) {
    if (!message.found) return html`<span class="note">unused: no code or link found</span>`;
    if (!message.may_answer) return html`<span class="note">not typed: the platform's sender is not proven (no valid DKIM signature)</span>`;
    return html`<span class="note">unused</span>`;
  }
  const action = answered.get(message.used_for);
  return action
    ? html`<a href="/app/actions/${action.id}" title="${action.id}">${typeTitle(action.type)}</a> ${status(action.status)}`
    : html`<a href="/app/actions/${message.used_for}"><code>${message.used_for}</code></a>`;
}

/** A read-only value and a button that copies it (the app's script does the copying). */
function copyable(id: string, label: string, value: string, button: string): Html {
  return html`<div class="field">
  <label for="${id}">${label}</label>
  <div class="row"><input type="text" id="${id}" readonly value="${value}" spellcheck="false"><button type="button" class="secondary" data-copy="${id}">${button}</button></div>
</div>`;
}
