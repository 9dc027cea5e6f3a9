import type { Hono } from "hono";
import { html } from "hono/html";
import { parse } from "../../api/request-parts.js";
import { AppError } from "../../domain/errors.js";
import type { Principal } from "../../domain/keys.js";
import { CreateAccountInput, UpdateAccountInput } from "../../engine/accounts/index.js";
import type { Engine } from "../../engine/engine.js";
import type { AccountRecord } from "../../store/records.js";
import { errorBox, field, fieldErrors, readForm } from "../forms.js";
import { csrfField, page, status, table, time, typeTitle, type Html, type Viewer } from "../layout.js";
import { liveFor } from "../live.js";
import { may, type WebEnv } from "../session.js";
import { inboxRoutes, inboxSection } from "./inbox.js";
import { paceRoutes, paceSection } from "./pace.js";

const NOTICES: Record<string, string> = {
  added: "Account added. Connect it to sign in, or open a sign-in link to sign in by hand.",
  updated: "Credentials saved.",
  removed: "Account removed, with its credentials and browser session.",
  rotated: "Inbox address and SMS URL replaced: the old ones no longer work.",
  checking: "A check of the sign-in is queued: this page shows what it finds when it is done.",
  paced: "Pace saved: queued actions of this account are weighed against it now.",
};

type Refused = { message: string; errors: Record<string, string>; values: Record<string, string> };

/** Accounts: the list, adding one, its page (connect, sign-in link, fixing credentials, removing). */
export function accountRoutes(web: Hono<WebEnv>, engine: Engine): void {
  web.get("/accounts", async (c) => {
    const { principal } = c.get("session");
    const accounts = await engine.accounts.list(principal);
    return c.html(accountsPage(engine, c.get("viewer"), principal, accounts, { notice: NOTICES[c.req.query("done") ?? ""], live: await liveFor(c, engine, ["account.updated:*"]) }));
  });

  web.post("/accounts", async (c) => {
    const { principal } = c.get("session");
    const form = await readForm(c);
    const values = { platform: form.get("platform"), username: form.get("username") };
    try {
      const input = parse(
        CreateAccountInput,
        { ...values, ...(form.get("password") ? { password: form.get("password") } : {}), ...(form.get("totp_secret").trim() ? { totp_secret: form.get("totp_secret") } : {}) },
        "body",
      );
      const account = await engine.accounts.create(principal, input);
      return c.redirect(`/app/accounts/${account.id}?done=added`, 303);
    } catch (error) {
      if (!(error instanceof AppError) || (error.code !== "invalid_request" && error.code !== "conflict")) throw error;
      // Secrets are never sent back, not even into the form they came from.
      return c.html(accountsPage(engine, c.get("viewer"), principal, await engine.accounts.list(principal), { refused: { message: error.message, errors: fieldErrors(error), values } }), error.httpStatus as 422);
    }
  });

  web.get("/accounts/:id", async (c) => {
    const { principal } = c.get("session");
    const account = await engine.accounts.get(principal, c.req.param("id"));
    return c.html(await accountPage(engine, c.get("viewer"), principal, account, { notice: NOTICES[c.req.query("done") ?? ""], live: await liveFor(c, engine, [`account.updated:${account.id}`]) }));
  });

  web.post("/accounts/:id", async (c) => {
    const { principal } = c.get("session");
    const account = await engine.accounts.get(principal, c.req.param("id"));
    const form = await readForm(c);
    const username = form.get("username").trim();
    try {
      const input = parse(
        UpdateAccountInput,
        {
          ...(username && username !== account.username ? { username } : {}),
          ...(form.get("password") ? { password: form.get("password") } : {}),
          ...(form.get("remove_totp") === "true" ? { totp_secret: null } : form.get("totp_secret").trim() ? { totp_secret: form.get("totp_secret") } : {}),
        },
        "body",
      );
      await engine.accounts.update(principal, account.id, input);
      return c.redirect(`/app/accounts/${account.id}?done=updated`, 303);
    } catch (error) {
      if (!(error instanceof AppError) || (error.code !== "invalid_request" && error.code !== "conflict")) throw error;
      return c.html(await accountPage(engine, c.get("viewer"), principal, account, { refused: { message: error.message, errors: fieldErrors(error), values: { username } } }), error.httpStatus as 422);
    }
  });

  web.post("/accounts/:id/connect", async (c) => {
    const { principal } = c.get("session");
    await readForm(c);
    const action = await engine.createAction(principal, { account_id: c.req.param("id"), type: "connect", params: {} });
    return c.redirect(`/app/actions/${action.id}`, 303);
  });

  web.post("/accounts/:id/check", async (c) => {
    const { principal } = c.get("session");
    await readForm(c);
    const account = await engine.healthChecks.checkNow(principal, c.req.param("id"));
    return c.redirect(`/app/accounts/${account.id}?done=checking`, 303);
  });

  web.post("/accounts/:id/sign-in-links", async (c) => {
    const { principal } = c.get("session");
    await readForm(c);
    const account = await engine.accounts.get(principal, c.req.param("id"));
    const link = await engine.live.createSignInLink(principal, account.id);
    return c.html(await accountPage(engine, c.get("viewer"), principal, account, { link }));
  });

  web.post("/accounts/:id/delete", async (c) => {
    const { principal } = c.get("session");
    const account = await engine.accounts.get(principal, c.req.param("id"));
    const form = await readForm(c);
    if (form.get("confirm") !== "yes") {
      return c.html(await accountPage(engine, c.get("viewer"), principal, account, { removeError: "Tick the box to confirm: removing cannot be undone." }), 422);
    }
    await engine.accounts.delete(principal, account.id);
    return c.redirect("/app/accounts?done=removed", 303);
  });

  inboxRoutes(web, engine);
  paceRoutes(web, engine);
}

function accountsPage(
  engine: Engine,
  viewer: Viewer,
  principal: Principal,
  accounts: AccountRecord[],
  options: { notice?: string | undefined; refused?: Refused; live?: { watch: string; after: string } | undefined },
): Html {
  const platforms = engine.platforms();
  const refused = options.refused;
  return page({
    title: "Accounts",
    viewer,
    section: "accounts",
    notice: options.notice,
    live: options.live,
    body: html`<h1>Accounts</h1>
${table({
  caption: "Accounts of this workspace",
  rows: accounts,
  empty: "No accounts yet.",
  columns: [
    { title: "Account", cell: (account) => html`<a href="/app/accounts/${account.id}">${account.username}</a>` },
    { title: "Platform", cell: (account) => account.platform },
    { title: "Status", cell: (account) => html`${status(account.status)}${account.status_reason ? html`<br /><span class="note">${account.status_reason}</span>` : ""}` },
    { title: "Signed in as", cell: (account) => account.profile?.name ?? html`<span class="note">unknown</span>` },
    { title: "Last checked", cell: (account) => (account.checked_at ? time(account.checked_at) : html`<span class="note">never</span>`) },
    { title: "Added", cell: (account) => time(account.created_at) },
  ],
})}
${may(principal, "manage_accounts")
  ? html`<form method="post" action="/app/accounts" class="card spaced" aria-labelledby="add-title">
  ${csrfField(viewer)}
  <h2 id="add-title">Add an account</h2>
  ${errorBox(refused?.message)}
  <label for="f-platform">Platform</label>
  <select id="f-platform" name="platform">${platforms.map((platform) => html`<option value="${platform.name}"${refused?.values.platform === platform.name ? html` selected` : ""}>${platform.title}</option>`)}</select>
  ${field({ name: "username", label: "Sign-in name", value: refused?.values.username, error: refused?.errors.username, required: true, autocomplete: "off" })}
  ${field({ name: "password", label: "Password (optional)", type: "password", error: refused?.errors.password, autocomplete: "new-password", hint: "Stored encrypted and never shown again. Leave empty to sign in by hand through a sign-in link." })}
  ${field({ name: "totp_secret", label: "Authenticator (TOTP) secret (optional)", type: "password", error: refused?.errors.totp_secret, autocomplete: "off", hint: "The base32 secret behind the account's authenticator app: the service then answers its codes itself." })}
  <button type="submit">Add the account</button>
</form>`
  : ""}`,
  });
}

async function accountPage(
  engine: Engine,
  viewer: Viewer,
  principal: Principal,
  account: AccountRecord,
  options: { notice?: string | undefined; refused?: Refused; link?: { url: string; expires_at: string }; removeError?: string; live?: { watch: string; after: string } | undefined },
): Promise<Html> {
  const recent = (await engine.listActions(principal, { account_id: account.id, limit: 10 })).data;
  const refused = options.refused;
  return page({
    title: account.username,
    viewer,
    section: "accounts",
    notice: options.notice,
    // A sign-in link is shown once: a reload would lose it.
    live: options.link ? undefined : options.live,
    body: html`<h1>${account.username} on ${account.platform}</h1>
<div class="grid">
<div>
  <section class="card" aria-labelledby="status-title">
    <h2 id="status-title">Status: ${status(account.status)}</h2>
    ${account.status_reason ? html`<p>${account.status_reason}</p>` : ""}
    <dl class="facts">
      <dt>Last checked</dt><dd>${account.checked_at ? time(account.checked_at) : "never"}</dd>
      <dt>Signed in as</dt><dd>${account.profile ? `${account.profile.name} (@${account.profile.handle})` : "not yet signed in"}</dd>
      <dt>Password</dt><dd>${account.has_password ? "stored" : "none (sign in by hand)"}</dd>
      <dt>Authenticator secret</dt><dd>${account.has_totp_secret ? "stored" : "none"}</dd>
      <dt>Account id</dt><dd><code>${account.id}</code></dd>
    </dl>
    ${may(principal, "act")
      ? html`<div class="actions-bar">
      <form method="post" action="/app/accounts/${account.id}/connect">${csrfField(viewer)}<button type="submit">Connect</button></form>
      <form method="post" action="/app/accounts/${account.id}/sign-in-links">${csrfField(viewer)}<button type="submit" class="secondary">Create a sign-in link</button></form>
      ${account.status === "new" ? "" : html`<form method="post" action="/app/accounts/${account.id}/check">${csrfField(viewer)}<button type="submit" class="secondary">Check the sign-in now</button></form>`}
      <a class="button secondary" href="/app/actions/new?account_id=${account.id}">Run an action</a>
    </div>`
      : ""}
    ${options.link
      ? html`<div class="notice" role="status" id="sign-in-link">
      <p>A sign-in link for the owner of this account, valid until ${time(options.link.expires_at)}. It opens the live browser on the platform's sign-in page; no API key is needed. It is shown only now.</p>
      <label for="link-url">Sign-in link</label>
      <input type="text" id="link-url" readonly value="${options.link.url}">
      <div class="actions-bar"><a class="button" href="${options.link.url}" target="_blank" rel="noopener noreferrer">Open the live browser</a><button type="button" class="secondary" data-copy="link-url">Copy the link</button></div>
    </div>`
      : ""}
  </section>
  <section aria-labelledby="recent-title">
    <h2 id="recent-title">Recent actions</h2>
    ${table({
      caption: "This account's recent actions",
      rows: recent,
      empty: "No actions on this account yet.",
      columns: [
        { title: "Action", cell: (action) => html`<a href="/app/actions/${action.id}">${typeTitle(action.type)}</a>` },
        { title: "Status", cell: (action) => status(action.status) },
        { title: "Created", cell: (action) => time(action.created_at) },
      ],
    })}
    <p class="pager"><a href="/app/actions?account_id=${account.id}">Every action on this account</a></p>
  </section>
  ${paceSection(engine, viewer, principal, account)}
  ${await inboxSection(engine, viewer, principal, account)}
</div>
${may(principal, "manage_accounts")
  ? html`<div>
  <form method="post" action="/app/accounts/${account.id}" class="card" aria-labelledby="fix-title">
    ${csrfField(viewer)}
    <h2 id="fix-title">Fix the credentials</h2>
    <p class="note">After <code>login_failed</code>, correct what was wrong and connect again. Empty fields keep what is stored.</p>
    ${errorBox(refused?.message)}
    ${field({ name: "username", label: "Sign-in name", value: refused?.values.username ?? account.username, error: refused?.errors.username, required: true, autocomplete: "off" })}
    ${field({ name: "password", label: "New password", type: "password", error: refused?.errors.password, autocomplete: "new-password" })}
    ${field({ name: "totp_secret", label: "New authenticator (TOTP) secret", type: "password", error: refused?.errors.totp_secret, autocomplete: "off" })}
    ${account.has_totp_secret ? html`<label class="check"><input type="checkbox" name="remove_totp" value="true"> Remove the stored authenticator secret</label>` : ""}
    <button type="submit">Save</button>
  </form>
  <form method="post" action="/app/accounts/${account.id}/delete" class="card" aria-labelledby="remove-title">
    ${csrfField(viewer)}
    <h2 id="remove-title">Remove the account</h2>
    <p class="note">Deletes its credentials and its browser session. Its past actions stay in the list.</p>
    ${errorBox(options.removeError)}
    <label class="check"><input type="checkbox" name="confirm" value="yes" required> Yes, remove ${account.username}</label>
    <button type="submit" class="danger">Remove</button>
  </form>
</div>`
  : ""}
</div>`,
  });
}
