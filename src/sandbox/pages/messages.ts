import { alert, csrfField, html, timeTag, type SafeHtml } from "../html.js";
import { conversationPath, newMessagePath, personPath, type Skin } from "../skin.js";
import { MESSAGE_MAX_LENGTH, type Message, type User } from "../state.js";

/** Why a message was refused, as the page says it. */
export const MESSAGE_REFUSALS = {
  empty: "Your message is empty. Write something first.",
  too_long: `Your message is too long. Messages can be up to ${MESSAGE_MAX_LENGTH} characters.`,
  duplicate: "You already sent this.",
  unknownRecipient: "We couldn't find anyone with that username.",
  missingRecipient: "Enter the username of the person you want to message.",
  self: "You can't send a message to yourself.",
} as const;

/** One row of the conversation list. */
export interface ConversationSummary { id: string; other: User; last?: Message | undefined }

export function conversationListBody(skin: Skin, viewer: User, rows: ConversationSummary[]): SafeHtml {
  const preview = (row: ConversationSummary) =>
    row.last ? `${row.last.from === viewer.handle ? "You: " : ""}${row.last.text.slice(0, 80)}` : "No messages yet";
  if (skin.name === "redesign") {
    const items = rows.map((row) => html`<li class="thread entry">
        <a href="${conversationPath(skin, row.id)}"><strong>${row.other.name}</strong></a>
        <div class="entry-meta">@${row.other.handle}${row.last ? html` — ${timeTag(row.last.sentAt)}` : ""}</div>
        <div class="muted">${preview(row)}</div></li>`);
    return html`<h1>${skin.text.messagesHeading}</h1>
      <p><a class="button" href="${newMessagePath(skin)}">${skin.text.newMessageLink}</a></p>
      <div class="panel"><ol class="threads conversations">${rows.length ? items : html`<li class="muted">Your inbox is empty.</li>`}</ol></div>`;
  }
  const items = rows.map((row) => html`<li>
      <a href="${conversationPath(skin, row.id)}"><strong>${row.other.name}</strong></a> <span class="handle">@${row.other.handle}</span>
      <p class="muted text">${preview(row)}</p>${row.last ? timeTag(row.last.sentAt) : ""}</li>`);
  return html`<h1>${skin.text.messagesHeading}</h1>
    <p><a class="button" href="${newMessagePath(skin)}">${skin.text.newMessageLink}</a></p>
    <section class="card"><ul class="conversations">${rows.length ? items : html`<li class="muted">No conversations yet.</li>`}</ul></section>`;
}

function messageForm(skin: Skin, csrf: string, action: string, error: string | undefined, draft: string | undefined, to?: string): SafeHtml {
  const toField = to === undefined ? html`` : html`<label for="message-to">${skin.text.to}</label>
      <input type="text" id="message-to" name="to" value="${to}" autocapitalize="none" placeholder="username">`;
  return html`<form method="post" action="${action}">
      ${csrfField(csrf)}
      ${toField}
      <label for="message-text">${skin.text.message}</label>
      ${alert(error)}
      <textarea id="message-text" name="text" rows="3">${draft ?? ""}</textarea>
      <div class="actions"><button type="submit">${skin.text.sendButton}</button></div>
    </form>`;
}

export interface ConversationView {
  skin: Skin;
  csrf: string;
  id: string;
  viewer: User;
  other: User;
  messages: Message[];
  authorOf: (handle: string) => User | undefined;
  error?: string;
  draft?: string;
}

export function conversationBody(view: ConversationView): SafeHtml {
  const { skin, viewer } = view;
  const items = view.messages.map((message) => {
    const from = view.authorOf(message.from);
    const mine = message.from === viewer.handle ? "mine" : "theirs";
    return html`<li class="message ${mine}" id="message-${message.id}">
        <p class="meta"><span class="from">${from?.name ?? message.from}</span><span class="handle">@${message.from}</span>${timeTag(message.sentAt)}</p>
        <p class="text">${message.text}</p></li>`;
  });
  const list = html`<ol class="messages" aria-label="${skin.name === "redesign" ? "Thread" : "Messages"}">${items}</ol>`;
  const form = messageForm(skin, view.csrf, conversationPath(skin, view.id), view.error, view.draft);
  const who = html`<p class="handle"><a href="${personPath(skin, view.other.handle)}">@${view.other.handle}</a></p>`;
  if (skin.name === "redesign") {
    return html`<h1>${view.other.name}</h1>${who}<div class="panel">${list}</div><div class="panel">${form}</div>`;
  }
  return html`<h1>Conversation with ${view.other.name}</h1>${who}<section class="card">${list}${form}</section>`;
}

export interface NewMessageView { skin: Skin; csrf: string; to: string; recipient?: User | undefined; error?: string; draft?: string }

export function newMessageBody(view: NewMessageView): SafeHtml {
  const { skin } = view;
  const intro = view.recipient
    ? html`<p>Start a conversation with ${view.recipient.name} (@${view.recipient.handle}).</p>`
    : html``;
  const form = messageForm(skin, view.csrf, newMessagePath(skin), undefined, view.draft, view.to);
  return html`<h1>${skin.text.newMessageHeading}</h1>${intro}${alert(view.error)}<section class="card panel">${form}</section>`;
}

/** What every messages page shows to an account without direct messages (the same words in both skins). */
export const MESSAGING_OFF = {
  heading: "Messaging isn't available",
  text: "Direct messages aren't available for your account.",
} as const;

export function messagingOffBody(skin: Skin): SafeHtml {
  return html`<section class="card panel narrow">
      <h1>${MESSAGING_OFF.heading}</h1>
      <p>${MESSAGING_OFF.text}</p>
      <p><a href="${skin.paths.home}">Go to ${skin.text.brand}</a></p>
    </section>`;
}
