import type { Hono } from "hono";
import { html } from "hono/html";
import { parse } from "../../api/request-parts.js";
import type { Principal } from "../../domain/keys.js";
import { PACE_FIELDS, describePace, utcTime } from "../../domain/pace.js";
import { UpdateAccountInput } from "../../engine/accounts/index.js";
import type { Engine } from "../../engine/engine.js";
import type { PaceHold } from "../../engine/execution/index.js";
import type { AccountRecord } from "../../store/records.js";
import { field, readForm } from "../forms.js";
import { csrfField, typeTitle, type Html, type Viewer } from "../layout.js";
import { may, type WebEnv } from "../session.js";

/** The pace form (admins): one action type's three limits; an empty field restores the platform's default. */
export function paceRoutes(web: Hono<WebEnv>, engine: Engine): void {
  web.post("/accounts/:id/pace", async (c) => {
    const { principal } = c.get("session");
    const form = await readForm(c);
    const limit = (name: string) => (form.get(name).trim() === "" ? null : Number(form.get(name)));
    const input = parse(UpdateAccountInput, { pace: { [form.get("type")]: Object.fromEntries(PACE_FIELDS.map((name) => [name, limit(name)])) } }, "body");
    const account = await engine.accounts.update(principal, c.req.param("id"), input);
    return c.redirect(`/app/accounts/${account.id}?done=paced`, 303);
  });
}

/** The account page's pace (DESIGN §16): what it runs at per action type, and for admins a form to change it. */
export function paceSection(engine: Engine, viewer: Viewer, principal: Principal, account: AccountRecord): Html {
  const paces = engine.accounts.pacesOf(account);
  const types = engine.platforms().find((platform) => platform.name === account.platform)?.actions.map((action) => action.type) ?? [];
  const rows = types.map((type) => html`<dt>${typeTitle(type)}</dt><dd>${paces[type] ? describePace(type, paces[type]) : "not paced"}${account.pace[type] ? " (changed for this account)" : ""}</dd>`);
  return html`<section class="card spaced" aria-labelledby="pace-title">
  <h2 id="pace-title">Pace</h2>
  <p class="note">How often this account starts each action: the platform's defaults, with this account's changes. An action past it waits, queued, until it may run; it is never failed for that.</p>
  <dl class="facts" id="pace">${rows}</dl>
  ${may(principal, "manage_accounts") && types.length > 0
    ? html`<form method="post" action="/app/accounts/${account.id}/pace" aria-labelledby="pace-form-title">
    ${csrfField(viewer)}
    <h3 id="pace-form-title">Change the pace</h3>
    <label for="f-pace-type">Action</label>
    <select id="f-pace-type" name="type">${types.map((type) => html`<option value="${type}">${typeTitle(type)}</option>`)}</select>
    ${field({ name: "per_hour", label: "At most, per rolling hour", type: "number", min: 1, hint: "Empty: the platform's default." })}
    ${field({ name: "per_day", label: "At most, per rolling day", type: "number", min: 1, hint: "Empty: the platform's default." })}
    ${field({ name: "min_gap_seconds", label: "Seconds between two starts", type: "number", min: 0, hint: "Empty: the platform's default." })}
    <button type="submit" class="secondary">Save the pace</button>
  </form>`
    : ""}
</section>`;
}

/** The run form's line on when an action would start: now, or when its pace or a cool-down lets it. */
export function paceNote(hold: PaceHold | undefined, now: Date): Html {
  if (!hold) return html`<p class="note" id="pace-note">Runs now (after any action of this account that runs or waits before it).</p>`;
  const at = utcTime(hold.until, now);
  const why = hold.kind === "cooldown" ? "Cooling down: the platform asked this account to slow down" : `Paced: ${describePace(hold.type, hold.pace)} on this account`;
  return html`<p class="note" id="pace-note">${why}; would run at ${at}. It waits queued until then.</p>`;
}
