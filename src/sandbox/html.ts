import { personPath, type Skin } from "./skin.js";
import type { User } from "./state.js";
import type { Flash } from "./sessions.js";
import { STYLESHEET } from "./style.js";

/** HTML that is already safe: only `html` and `raw` make one. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ESCAPES[ch] ?? ch);
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join("");
  if (value === null || value === undefined || value === false || value === true) return "";
  return escapeHtml(String(value));
}

/** Tagged template that escapes every interpolated value unless it is SafeHtml. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? "");
  });
  return new SafeHtml(out);
}

/** Trusted markup, e.g. the stylesheet or an inline script we wrote. */
export function raw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

/** A hidden CSRF field; every form on the site has one. */
export function csrfField(csrf: string): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${csrf}">`;
}

/** `<time datetime="ISO">Mar 3, 2026, 14:05 UTC</time>` */
export function timeTag(date: Date): SafeHtml {
  const month = date.toLocaleString("en-US", { month: "short", timeZone: "UTC" });
  const hh = String(date.getUTCHours()).padStart(2, "0");
  const mm = String(date.getUTCMinutes()).padStart(2, "0");
  const label = `${month} ${date.getUTCDate()}, ${date.getUTCFullYear()}, ${hh}:${mm} UTC`;
  return html`<time datetime="${date.toISOString()}">${label}</time>`;
}

export function alert(message: string | undefined): SafeHtml {
  return message ? html`<p class="alert error" role="alert">${message}</p>` : html``;
}

export function notice(message: string | undefined): SafeHtml {
  return message ? html`<p class="alert notice" role="status">${message}</p>` : html``;
}

function flashMessage(flash: Flash | undefined): SafeHtml {
  if (!flash) return html``;
  return flash.tone === "error" ? alert(flash.text) : notice(flash.text);
}

/** What every page needs to be wrapped in the site's chrome. */
export interface PageFrame {
  skin: Skin;
  title: string;
  viewer?: User | undefined;
  csrf: string;
  flash?: Flash | undefined;
  body: SafeHtml;
}

function classicChrome(frame: PageFrame): SafeHtml {
  const { skin, viewer } = frame;
  const nav = viewer
    ? html`<nav aria-label="Main">
        <a href="${skin.paths.home}">${skin.text.navHome}</a>
        <a href="${skin.paths.messages}">${skin.text.navMessages}</a>
        <a href="${personPath(skin, viewer.handle)}">${skin.text.navProfile}</a>
        <form method="post" action="${skin.paths.signOut}" class="inline">${csrfField(frame.csrf)}<button type="submit" class="link">${skin.text.signOutButton}</button></form>
      </nav>`
    : html``;
  return html`<header class="topbar"><div class="wrap bar">
      <a class="brand" href="${skin.paths.home}"><span class="logo" aria-hidden="true">S</span>${skin.text.brand}</a>
      ${nav}
    </div></header>
    <main class="wrap">${flashMessage(frame.flash)}${frame.body}</main>
    <footer class="wrap footer">Sandbox Social · a small network for testing drivers</footer>`;
}

function redesignChrome(frame: PageFrame): SafeHtml {
  const { skin, viewer } = frame;
  const nav = viewer
    ? html`<nav aria-label="Primary"><ul>
        <li><a href="${skin.paths.home}">${skin.text.navHome}</a></li>
        <li><a href="${skin.paths.messages}">${skin.text.navMessages}</a></li>
        <li><a href="${personPath(skin, viewer.handle)}">${skin.text.navProfile}</a></li>
      </ul>
      <form method="post" action="${skin.paths.signOut}">${csrfField(frame.csrf)}<button type="submit" class="ghost">${skin.text.signOutButton}</button></form></nav>`
    : html``;
  return html`<div class="shell">
      <aside class="rail"><a class="brand" href="${skin.paths.home}">${skin.text.brand}</a>${nav}</aside>
      <div class="stage"><main>${flashMessage(frame.flash)}${frame.body}</main></div>
    </div>`;
}

/** The full page: head, the skin's chrome (header or side rail) and the body. */
export function layout(frame: PageFrame): SafeHtml {
  const chrome = frame.skin.name === "classic" ? classicChrome(frame) : redesignChrome(frame);
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${frame.title} · Sandbox Social</title>
<style>${raw(STYLESHEET)}</style>
</head>
<body class="${frame.skin.name}">
${chrome}
</body>
</html>`;
}
