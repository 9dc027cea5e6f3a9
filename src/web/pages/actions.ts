import type { Context, Hono } from "hono";
import { html } from "hono/html";
import { parse } from "../../api/request-parts.js";
import { isAnswerableByApi } from "../../domain/challenges.js";
import { AppError } from "../../domain/errors.js";
import type { Principal } from "../../domain/keys.js";
import type { PlatformReference, PublicAction } from "../../domain/public.js";
import { ACTION_STATUSES, isTerminal } from "../../domain/status.js";
import { AnswerInput, CreateActionInput, ListActionsQuery } from "../../engine/actions.js";
import type { Engine } from "../../engine/engine.js";
import type { AccountRecord } from "../../store/records.js";
import { errorBox, fieldErrors, readForm } from "../forms.js";
import { csrfField, page, status, table, time, typeTitle, type Html, type Viewer } from "../layout.js";
import { liveFor } from "../live.js";
import { paramInputs, paramsFromForm, submittedValues } from "../params-form.js";
import { may, type WebEnv } from "../session.js";
import { feedbackForm } from "./events.js";
import { paceNote } from "./pace.js";
import { againParams, runAgainForm } from "./run-again.js";

const KIND_NAMES: Record<string, string> = {
  two_factor_code: "Authenticator code",
  email_code: "Emailed code",
  sms_code: "Texted code",
  device_approval: "Device approval",
  captcha: "Puzzle",
  other: "Sign-in step",
};

function accountName(account: AccountRecord | undefined): string {
  return account ? `${account.username} on ${account.platform}` : "(removed account)";
}

/** The actions list, the run form, an action's page, and answering and canceling from it. */
export function actionRoutes(web: Hono<WebEnv>, engine: Engine): void {
  web.get("/actions", async (c) => {
    const { principal } = c.get("session");
    const query = parse(ListActionsQuery, pick(c, ["account_id", "status", "cursor"]), "query");
    const page_ = await engine.listActions(principal, query);
    const accounts = new Map((await engine.accounts.list(principal)).map((account) => [account.id, account]));
    const next = page_.next_cursor ? `/app/actions?${new URLSearchParams({ ...pick(c, ["account_id", "status"]), cursor: page_.next_cursor })}` : undefined;
    return c.html(
      page({
        title: "Actions",
        viewer: c.get("viewer"),
        section: "actions",
        notice: undefined,
        // The newest page follows every action; an older one stays as it is.
        live: query.cursor ? undefined : await liveFor(c, engine, ["action.updated:*"]),
        body: html`<div class="actions-bar"><h1>Actions</h1>${may(principal, "act") ? html`<a class="button" href="/app/actions/new">Run an action</a>` : ""}</div>
<form method="get" action="/app/actions" class="card row" aria-label="Filter actions">
  <div><label for="filter-account">Account</label><select id="filter-account" name="account_id">
    <option value="">Every account</option>
    ${[...accounts.values()].map((account) => html`<option value="${account.id}"${query.account_id === account.id ? html` selected` : ""}>${accountName(account)}</option>`)}
  </select></div>
  <div><label for="filter-status">Status</label><select id="filter-status" name="status">
    <option value="">Any status</option>
    ${ACTION_STATUSES.map((value) => html`<option value="${value}"${query.status === value ? html` selected` : ""}>${value.replace("_", " ")}</option>`)}
  </select></div>
  <button type="submit" class="secondary">Filter</button>
</form>
${table({
  caption: "Actions, newest first",
  rows: page_.data,
  empty: query.account_id || query.status ? "No action matches these filters." : "No actions yet.",
  columns: [
    { title: "Action", cell: (action) => html`<a href="/app/actions/${action.id}">${typeTitle(action.type)}</a>` },
    { title: "Account", cell: (action) => accountName(accounts.get(action.account_id)) },
    { title: "Status", cell: (action) => status(action.status) },
    { title: "Cost", cell: (action) => String(action.cost) },
    { title: "Created", cell: (action) => time(action.created_at) },
  ],
})}
${next ? html`<p class="pager"><a href="${next}">Older actions</a></p>` : ""}`,
      }),
    );
  });

  web.get("/actions/new", async (c) => c.html(await runForm(engine, c.get("viewer"), c.get("session").principal, { account_id: c.req.query("account_id") ?? "", type: c.req.query("type") ?? "" })));

  web.post("/actions", async (c) => {
    const { principal } = c.get("session");
    const form = await readForm(c);
    const chosen = { account_id: form.get("account_id"), type: form.get("type") };
    const schema = await paramsSchema(engine, principal, chosen.account_id, chosen.type);
    try {
      const params = form.get("params_json") ? againParams(chosen.type, parseJson(form.get("params_json")), form.get) : schema ? paramsFromForm(schema, form.get) : {};
      const input = parse(CreateActionInput, { ...chosen, params }, "body");
      const action = await engine.createAction(principal, input);
      return c.redirect(`/app/actions/${action.id}`, 303);
    } catch (error) {
      if (!(error instanceof AppError) || (error.code !== "invalid_request" && error.code !== "forbidden" && error.code !== "not_found")) throw error;
      const errors = fieldErrors(error, "body.params.");
      const values = schema ? submittedValues(schema, form.get) : {};
      return c.html(await runForm(engine, c.get("viewer"), principal, chosen, { message: error.message, errors: Object.fromEntries(Object.entries(errors).map(([path, message]) => [path.replace(/^params\./, ""), message])), values }), error.httpStatus as 422);
    }
  });

  web.get("/actions/:id", async (c) => {
    const { principal } = c.get("session");
    const record = await engine.getAction(principal, c.req.param("id"));
    const action = await engine.present(record, "web");
    const account = (await engine.accounts.list(principal)).find((candidate) => candidate.id === record.account_id);
    const done = c.req.query("done");
    return c.html(
      page({
        title: `${typeTitle(action.type)} · ${accountName(account)}`,
        viewer: c.get("viewer"),
        section: "actions",
        notice: done === "answered" ? "Answer sent: the action continues." : done === "canceled" ? "The action is canceled." : done === "feedback" ? "Feedback sent. Thank you." : undefined,
        live: isTerminal(record.status) ? undefined : await liveFor(c, engine, [`action.updated:${record.id}`]),
        body: actionDetail(action, account, principal, c.get("viewer")),
      }),
    );
  });

  web.post("/actions/:id/answer", async (c) => {
    const { principal } = c.get("session");
    const id = c.req.param("id");
    const form = await readForm(c);
    try {
      const { answer } = parse(AnswerInput, { answer: form.get("answer") }, "body");
      await engine.answer(principal, id, answer, "person");
      return c.redirect(`/app/actions/${id}?done=answered`, 303);
    } catch (error) {
      if (!(error instanceof AppError) || (error.code !== "invalid_request" && error.code !== "conflict")) throw error;
      const record = await engine.getAction(principal, id);
      const account = (await engine.accounts.list(principal)).find((candidate) => candidate.id === record.account_id);
      const action = await engine.present(record, "web");
      return c.html(page({ title: "Answer refused", viewer: c.get("viewer"), section: "actions", body: html`${errorBox(error.message)}${actionDetail(action, account, principal, c.get("viewer"))}` }), error.httpStatus as 422);
    }
  });

  web.post("/actions/:id/cancel", async (c) => {
    const id = c.req.param("id");
    await readForm(c);
    await engine.cancel(c.get("session").principal, id);
    return c.redirect(`/app/actions/${id}?done=canceled`, 303);
  });
}

function pick(c: Context, names: string[]): Record<string, string> {
  return Object.fromEntries(names.map((name) => [name, c.req.query(name) ?? ""]).filter(([, value]) => value !== ""));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new AppError("invalid_request", "The params are not valid JSON.");
  }
}

/** The params schema of a type on the account's platform, when both are known. */
async function paramsSchema(engine: Engine, principal: Principal, accountId: string, type: string): Promise<Record<string, unknown> | undefined> {
  const account = (await engine.accounts.list(principal)).find((candidate) => candidate.id === accountId);
  const platform = account && engine.platforms().find((candidate) => candidate.name === account.platform);
  return platform?.actions.find((candidate) => candidate.type === type)?.params;
}

/**
 * The run form, built from the action reference: choose an account, then one of its platform's
 * types (the page shows that type's fields), then its params.
 */
async function runForm(
  engine: Engine,
  viewer: Viewer,
  principal: Principal,
  chosen: { account_id: string; type: string },
  refused?: { message: string; errors: Record<string, string>; values: Record<string, string> },
): Promise<Html> {
  const accounts = await engine.accounts.list(principal);
  const account = accounts.find((candidate) => candidate.id === chosen.account_id) ?? accounts[0];
  const platform: PlatformReference | undefined = account && engine.platforms().find((candidate) => candidate.name === account.platform);
  const type = platform?.actions.find((candidate) => candidate.type === chosen.type) ?? platform?.actions.find((candidate) => candidate.type !== "connect") ?? platform?.actions[0];
  const body = !may(principal, "act")
    ? html`<p class="error" role="alert">This key (role ${principal.role}) may read actions but not run them.</p>`
    : !account || !platform || !type
      ? html`<p>There is no account to act as yet. ${may(principal, "manage_accounts") ? html`<a href="/app/accounts">Add an account</a> first.` : "An admin adds accounts."}</p>`
      : html`<form method="get" action="/app/actions/new" class="card row" aria-label="Choose the account and action">
  <div><label for="run-account">Account</label><select id="run-account" name="account_id" data-autosubmit>
    ${accounts.map((candidate) => html`<option value="${candidate.id}"${candidate.id === account.id ? html` selected` : ""}>${accountName(candidate)} (${candidate.status})</option>`)}
  </select></div>
  <div><label for="run-type">Action</label><select id="run-type" name="type" data-autosubmit>
    ${platform.actions.map((candidate) => html`<option value="${candidate.type}"${candidate.type === type.type ? html` selected` : ""}>${typeTitle(candidate.type)} (${candidate.price} credit${candidate.price === 1 ? "" : "s"})</option>`)}
  </select></div>
  <button type="submit" class="secondary without-script">Show its fields</button>
</form>
<form method="post" action="/app/actions" class="card" aria-labelledby="run-title">
  ${csrfField(viewer)}
  <input type="hidden" name="account_id" value="${account.id}">
  <input type="hidden" name="type" value="${type.type}">
  <h2 id="run-title">${typeTitle(type.type)} as ${account.username}</h2>
  <p class="note">${type.description} Costs ${type.price} credit${type.price === 1 ? "" : "s"} when it succeeds.</p>
  ${errorBox(refused?.message)}
  ${paramInputs(type.params, refused?.values ?? {}, refused?.errors ?? {})}
  ${paceNote(await engine.accounts.paceHold(principal, account.id, type.type), engine.core.lifecycle.clock.now())}
  <button type="submit">Run</button>
</form>`;
  return page({ title: "Run an action", viewer, section: "actions", body: html`<h1>Run an action</h1>${body}` });
}

/** An action's page: what it is, where it stands, and what to do about it. */
function actionDetail(action: PublicAction, account: AccountRecord | undefined, principal: Principal, viewer: Viewer): Html {
  const canAct = may(principal, "act");
  const challenge = action.challenge;
  return html`<div class="actions-bar"><h1>${typeTitle(action.type)} · ${accountName(account)}</h1></div>
<div class="grid">
<div>
  <section class="card" aria-labelledby="state-title">
    <h2 id="state-title">Status: ${status(action.status)}</h2>
    ${action.next_step ? html`<p id="next-step">${action.next_step}</p>` : ""}
    ${action.error ? html`<p class="error" id="action-error"><strong>${action.error.code}</strong>: ${action.error.message}</p>` : ""}
    ${!isTerminal(action.status) && canAct
      ? html`<form method="post" action="/app/actions/${action.id}/cancel">${csrfField(viewer)}<button type="submit" class="secondary">Cancel the action</button></form>`
      : ""}
    ${action.status === "failed" && canAct ? runAgainForm(action, viewer) : ""}
  </section>
  ${challenge
    ? html`<section class="card" aria-labelledby="challenge-title">
    <span class="kind">${KIND_NAMES[challenge.kind] ?? challenge.kind}</span>
    <h2 id="challenge-title">The sign-in needs you</h2>
    <p id="challenge-message">${challenge.message}</p>
    <p>Time left: <span class="countdown" data-deadline="${challenge.expires_at}" id="countdown">${time(challenge.expires_at)}</span></p>
    ${canAct && isAnswerableByApi(challenge.kind)
      ? html`<form method="post" action="/app/actions/${action.id}/answer">${csrfField(viewer)}
      <label for="answer">Code</label>
      <input type="text" id="answer" name="answer" required autocomplete="one-time-code" inputmode="numeric" maxlength="500">
      <button type="submit">Send answer</button></form>`
      : ""}
    <p><a class="button ${isAnswerableByApi(challenge.kind) ? "secondary" : ""}" id="live-link" href="${challenge.sign_in_url}" target="_blank" rel="noopener noreferrer">Open the live browser</a></p>
    <p class="note">The live browser shows the account's page; ${isAnswerableByApi(challenge.kind) ? "you can also type the code there." : "do what it asks there, or on the other device. This page follows the action."}</p>
  </section>`
    : ""}
  ${action.status === "failed" ? feedbackForm(viewer, principal, action.id) : ""}
  ${action.result ? html`<section class="card" aria-labelledby="result-title"><h2 id="result-title">Result</h2>${facts(action.result)}</section>` : ""}
</div>
<aside class="card" aria-label="Details">
  <dl class="facts">
    <dt>Action</dt><dd><code>${action.id}</code></dd>
    <dt>Account</dt><dd>${account ? html`<a href="/app/accounts/${account.id}">${accountName(account)}</a>` : accountName(account)}</dd>
    <dt>Cost</dt><dd>${action.cost} credit${action.cost === 1 ? "" : "s"}</dd>
    <dt>Created</dt><dd>${time(action.created_at)}</dd>
    <dt>Updated</dt><dd>${time(action.updated_at)}</dd>
    ${action.finished_at ? html`<dt>Finished</dt><dd>${time(action.finished_at)}</dd>` : ""}
  </dl>
  <h2 class="note spaced">Params</h2>
  <pre>${JSON.stringify(action.params, null, 2)}</pre>
</aside>
</div>`;
}

/** A result as a list of its fields: plain values as text, nested ones as JSON. */
function facts(value: Record<string, unknown>): Html {
  return html`<dl class="facts">${Object.entries(value).map(
    ([name, item]) => html`<dt>${typeTitle(name)}</dt><dd>${
      item !== null && typeof item === "object"
        ? html`<pre>${JSON.stringify(item, null, 2)}</pre>`
        : typeof item === "string" && /^https?:\/\//.test(item)
          ? html`<a href="${item}" rel="noopener noreferrer" target="_blank">${item}</a>`
          : String(item)
    }</dd>`,
  )}</dl>`;
}
