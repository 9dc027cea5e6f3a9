import type { Hono } from "hono";
import { html } from "hono/html";
import { z } from "zod";
import { parse } from "../../api/request-parts.js";
import { AppError } from "../../domain/errors.js";
import { KEY_ROLES, type Principal } from "../../domain/keys.js";
import type { Engine } from "../../engine/engine.js";
import type { IssuedKey } from "../../engine/access/index.js";
import { errorBox, readForm } from "../forms.js";
import { csrfField, page, table, time, type Html, type Viewer } from "../layout.js";
import type { WebEnv } from "../session.js";

const ROLE_HINTS: Record<(typeof KEY_ROLES)[number], string> = {
  admin: "admin: everything, including accounts, top-ups and keys",
  operator: "operator: runs, answers and cancels actions",
  read_only: "read only: sees, changes nothing",
};

const CreateKeyForm = z.strictObject({ role: z.enum(KEY_ROLES), account_ids: z.array(z.string().min(1).max(200)).max(1_000) });

/** API keys (admins): create (shown once), list, revoke — as `keys create | list | revoke` on the CLI. */
export function keyRoutes(web: Hono<WebEnv>, engine: Engine): void {
  web.get("/keys", async (c) => c.html(await keysPage(engine, c.get("viewer"), c.get("session").principal, c.get("session").principal.keyId, { notice: c.req.query("done") === "revoked" ? "Key revoked: every request with it is refused from now on." : undefined })));

  web.post("/keys", async (c) => {
    const { principal } = c.get("session");
    const form = await readForm(c);
    try {
      const input = parse(CreateKeyForm, { role: form.get("role"), account_ids: form.all("account_ids") }, "body");
      const issued = await engine.keys.createInWorkspace(principal, { role: input.role, accountIds: input.account_ids.length > 0 ? input.account_ids : undefined });
      return c.html(await keysPage(engine, c.get("viewer"), principal, principal.keyId, { issued }), 201);
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== "invalid_request") throw error;
      return c.html(await keysPage(engine, c.get("viewer"), principal, principal.keyId, { error: error.message }), 422);
    }
  });

  web.post("/keys/:id/revoke", async (c) => {
    await readForm(c);
    await engine.keys.revokeInWorkspace(c.get("session").principal, c.req.param("id"));
    return c.redirect("/app/keys?done=revoked", 303);
  });
}

async function keysPage(
  engine: Engine,
  viewer: Viewer,
  principal: Principal,
  ownKeyId: string | undefined,
  options: { issued?: IssuedKey; error?: string; notice?: string | undefined },
): Promise<Html> {
  const keys = await engine.keys.ofWorkspace(principal);
  const accounts = await engine.accounts.list(principal);
  const names = new Map(accounts.map((account) => [account.id, `${account.username} on ${account.platform}`]));
  return page({
    title: "API keys",
    viewer,
    section: "keys",
    notice: options.notice,
    body: html`<h1>API keys</h1>
${options.issued
  ? html`<section class="card" aria-labelledby="issued-title" role="status">
  <h2 id="issued-title">New ${options.issued.role.replace("_", " ")} key</h2>
  <p>Copy it now: it is shown only this once and cannot be read again.</p>
  <label for="issued-key">API key</label>
  <input type="text" id="issued-key" class="secret" readonly value="${options.issued.key}">
  <button type="button" class="secondary" data-copy="issued-key">Copy the key</button>
</section>`
  : ""}
${table({
  caption: "This workspace's API keys",
  rows: keys,
  empty: "No keys.",
  columns: [
    { title: "Key", cell: (key) => html`<code>${key.prefix}…</code>${key.id === ownKeyId ? html` <span class="note">(this session)</span>` : ""}` },
    { title: "Role", cell: (key) => key.role.replace("_", " ") },
    { title: "Accounts", cell: (key) => (key.account_ids ? key.account_ids.map((id) => names.get(id) ?? id).join(", ") : "every account") },
    { title: "Created", cell: (key) => time(key.created_at) },
    {
      title: "State",
      cell: (key) =>
        key.revoked_at
          ? html`<span class="status failed">revoked</span> ${time(key.revoked_at)}`
          : html`<span class="status connected">active</span> <details><summary>Revoke…</summary><form method="post" action="/app/keys/${key.id}/revoke">${csrfField(viewer)}<p class="note">${
              key.id === ownKeyId ? "This is the key of this session: revoking it signs you out." : "Every request with this key is refused from then on."
            }</p><button type="submit" class="danger">Revoke ${key.prefix}…</button></form></details>`,
    },
  ],
})}
<form method="post" action="/app/keys" class="card spaced" aria-labelledby="create-title">
  ${csrfField(viewer)}
  <h2 id="create-title">Create a key</h2>
  ${errorBox(options.error)}
  <fieldset><legend>Role</legend>
  ${KEY_ROLES.map((role) => html`<label class="check"><input type="radio" name="role" value="${role}"${role === "operator" ? html` checked` : ""}> ${ROLE_HINTS[role]}</label>`)}
  </fieldset>
  ${accounts.length > 0
    ? html`<fieldset><legend>Limit to these accounts (none ticked: every account)</legend>
  ${accounts.map((account) => html`<label class="check"><input type="checkbox" name="account_ids" value="${account.id}"> ${names.get(account.id)}</label>`)}
  </fieldset>`
    : ""}
  <button type="submit">Create the key</button>
</form>`,
  });
}
