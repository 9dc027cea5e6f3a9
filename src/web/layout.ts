import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import type { KeyRole } from "../domain/keys.js";
import { ASSET_VERSION } from "./assets.js";

/** Markup as `hono/html` builds it: every interpolated value is escaped unless it is markup itself. */
export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** Who is looking at a page: enough for the header and for deciding what each page offers. */
export interface Viewer {
  role: KeyRole;
  workspaceName: string;
  keyPrefix: string;
  csrfToken: string;
  /** The key may manage API keys (an admin key not limited to some accounts). */
  managesKeys: boolean;
}

export type Section = "actions" | "routines" | "accounts" | "credits" | "keys" | "webhooks" | "feedback";

const SECTIONS: { id: Section; title: string; href: string }[] = [
  { id: "actions", title: "Actions", href: "/app/actions" },
  { id: "routines", title: "Routines", href: "/app/routines" },
  { id: "accounts", title: "Accounts", href: "/app/accounts" },
  { id: "credits", title: "Credits", href: "/app/credits" },
  { id: "keys", title: "API keys", href: "/app/keys" },
  { id: "webhooks", title: "Webhooks", href: "/app/webhooks" },
  { id: "feedback", title: "Feedback", href: "/app/feedback" },
];

const ROLE_WORDS: Record<KeyRole, string> = { admin: "admin", operator: "operator", read_only: "read only" };

/** A whole page: header with the workspace and navigation, then the section's content. */
export function page(options: { title: string; viewer?: Viewer | undefined; section?: Section; notice?: string | undefined; body: Html; live?: { watch: string; after: string } | undefined }): Html {
  const { viewer } = options;
  // Admin pages are offered to admins only.
  const sections = SECTIONS.filter((section) => (section.id === "keys" ? viewer?.managesKeys : section.id === "webhooks" || section.id === "feedback" ? viewer?.role === "admin" : true));
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<link rel="icon" href="data:,">
<meta name="robots" content="noindex">
${viewer ? html`<meta name="csrf-token" content="${viewer.csrfToken}">` : ""}
<title>${options.title} · action-service</title>
<link rel="stylesheet" href="/app/assets/app.css?v=${ASSET_VERSION}">
<script src="/app/assets/app.js?v=${ASSET_VERSION}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/app">action-service</a>
  ${
    viewer
      ? html`<nav aria-label="Main"><ul>${sections.map(
          (section) => html`<li><a href="${section.href}"${section.id === options.section ? html` aria-current="page"` : ""}>${section.title}</a></li>`,
        )}</ul></nav>
  <div class="who">
    <span title="Workspace">${viewer.workspaceName}</span> · <span title="This session's key">${viewer.keyPrefix}… (${ROLE_WORDS[viewer.role]})</span>
    <form method="post" action="/app/sign-out">${csrfField(viewer)}<button type="submit" class="secondary small">Sign out</button></form>
  </div>`
      : ""
  }
</header>
<main id="main"${options.live ? html` data-watch="${options.live.watch}" data-after="${options.live.after}"` : ""}>
  ${options.notice ? html`<p class="notice" role="status">${options.notice}</p>` : ""}
  <p class="notice" id="changed" role="status" hidden>This page has changed. <button type="button" class="secondary small" data-reload>Show the latest</button></p>
  ${options.body}
</main>
</body>
</html>`;
}

/** The hidden form field every POST form carries. */
export function csrfField(viewer: Viewer): Html {
  return html`<input type="hidden" name="_csrf" value="${viewer.csrfToken}">`;
}

/** A short date and time, in UTC, readable on a phone; the full timestamp on hover and for screen readers' `datetime`. */
export function time(iso: string | undefined): Html {
  if (!iso) return html``;
  return html`<time datetime="${iso}" title="${iso}">${iso.slice(0, 16).replace("T", " ")} UTC</time>`;
}

/** An action type for people: `send_message` → "Send message". */
export function typeTitle(type: string): string {
  const words = type.replace(/_/g, " ").replace(/\b(url|id)\b/g, (word) => word.toUpperCase());
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** A status word, coloured, and never by colour alone. */
export function status(value: string): Html {
  return html`<span class="status ${value}">${value.replace("_", " ")}</span>`;
}

/** Every table collapses to labelled rows on a phone: each cell names its column. */
export function table<T>(options: { caption: string; columns: { title: string; cell: (row: T) => Html | string | number }[]; rows: T[]; empty: string }): Html {
  if (options.rows.length === 0) return html`<p class="empty">${options.empty}</p>`;
  return html`<div class="table"><table>
<caption class="visually-hidden">${options.caption}</caption>
<thead><tr>${options.columns.map((column) => html`<th scope="col">${column.title}</th>`)}</tr></thead>
<tbody>${options.rows.map((row) => html`<tr>${options.columns.map((column) => html`<td data-label="${column.title}"><div>${column.cell(row)}</div></td>`)}</tr>`)}</tbody>
</table></div>`;
}
