import type { Hono } from "hono";
import { html } from "hono/html";
import { ACTION_PRICES } from "../../domain/actions.js";
import { AppError } from "../../domain/errors.js";
import type { Principal } from "../../domain/keys.js";
import { RoutineName, secretParams, type RoutineVersion } from "../../domain/routines.js";
import type { Engine } from "../../engine/engine.js";
import type { Routine } from "../../engine/routines/index.js";
import type { ActionRecord } from "../../store/records.js";
import { errorBox, fieldErrors, readForm } from "../forms.js";
import { csrfField, page, status, table, time, type Html, type Viewer } from "../layout.js";
import { paramInputs, paramsFromForm, submittedValues } from "../params-form.js";
import { may, type WebEnv } from "../session.js";
import { stepWords } from "../step-words.js";

const NOTICES: Record<string, string> = { deleted: "Routine deleted. The actions that ran it stay readable." };

/** What a refused run sends back into its form: never a secret's value. */
type Refused = { message: string; errors: Record<string, string>; values: Record<string, string>; account_id: string };

/** Routines (DESIGN §14): the workspace's list, a routine's page (versions, steps, last runs), running one from a form built from its params schema, and deleting it. */
export function routineRoutes(web: Hono<WebEnv>, engine: Engine): void {
  web.get("/routines", async (c) => {
    const { principal } = c.get("session");
    const platform = c.req.query("platform") || undefined;
    const routines = await engine.routines.list(principal, platform);
    const lastRuns = await engine.routines.lastRuns(principal, routines.map((routine) => routine.name));
    return c.html(routinesPage(engine, c.get("viewer"), routines, lastRuns, platform, NOTICES[c.req.query("done") ?? ""]));
  });

  web.get("/routines/:name", async (c) => {
    const { principal } = c.get("session");
    return c.html(await routinePage(engine, c.get("viewer"), principal, await routineNamed(engine, principal, c.req.param("name")), { account_id: c.req.query("account_id") ?? "" }));
  });

  web.post("/routines/:name/run", async (c) => {
    const { principal } = c.get("session");
    const routine = await routineNamed(engine, principal, c.req.param("name"));
    const form = await readForm(c);
    const schema = routine.latest.params;
    const accountId = form.get("account_id");
    try {
      const params = paramsFromForm(schema, form.get);
      // The version shown is the version run: a version saved meanwhile is not run unseen.
      const action = await engine.createAction(principal, { account_id: accountId, type: "routine", params: { routine: routine.name, params, version: routine.latest.version } });
      return c.redirect(`/app/actions/${action.id}`, 303);
    } catch (error) {
      if (!(error instanceof AppError) || (error.code !== "invalid_request" && error.code !== "not_found")) throw error;
      const errors: Record<string, string> = {};
      for (const [path, message] of Object.entries(fieldErrors(error, "body."))) errors[path.replace(/^params\.(params\.)?/, "")] ??= message;
      const refused = { message: error.message, errors, values: submittedValues(schema, form.get), account_id: accountId };
      return c.html(await routinePage(engine, c.get("viewer"), principal, routine, { account_id: accountId, refused }), error.httpStatus as 422);
    }
  });

  web.post("/routines/:name/delete", async (c) => {
    const { principal } = c.get("session");
    const routine = await routineNamed(engine, principal, c.req.param("name"));
    const form = await readForm(c);
    if (form.get("confirm") !== "yes") {
      return c.html(await routinePage(engine, c.get("viewer"), principal, routine, { account_id: "", deleteError: "Tick the box to confirm: a deleted routine can no longer run." }), 422);
    }
    await engine.routines.delete(principal, routine.name);
    return c.redirect("/app/routines?done=deleted", 303);
  });
}

/** The live routine of that name, with its versions; a name that cannot be one is not found either. */
async function routineNamed(engine: Engine, principal: Principal, name: string): Promise<Routine> {
  if (!RoutineName.safeParse(name).success) throw new AppError("not_found", `No routine named "${name}" in this workspace.`);
  return engine.routines.get(principal, name);
}

function lastRun(action: ActionRecord | undefined): Html {
  return action ? html`<a href="/app/actions/${action.id}">${status(action.status)}</a> ${time(action.created_at)}` : html`<span class="note">never run</span>`;
}

function routinesPage(engine: Engine, viewer: Viewer, routines: Routine[], lastRuns: Map<string, ActionRecord | undefined>, platform: string | undefined, notice: string | undefined): Html {
  return page({
    title: "Routines",
    viewer,
    section: "routines",
    notice,
    body: html`<h1>Routines</h1>
<p class="note">Tasks an agent taught the service once, replayed without it: each runs as an action of type <code>routine</code> on an account of its platform.</p>
<form method="get" action="/app/routines" class="card row" aria-label="Filter routines">
  <div><label for="filter-platform">Platform</label><select id="filter-platform" name="platform" data-autosubmit>
    <option value="">Every platform</option>
    ${engine.platforms().map((one) => html`<option value="${one.name}"${one.name === platform ? html` selected` : ""}>${one.name}</option>`)}
  </select></div>
  <button type="submit" class="secondary without-script">Filter</button>
</form>
${
  routines.length === 0 && !platform
    ? html`<section class="card" aria-labelledby="empty-title"><h2 id="empty-title">No routines yet</h2>
  <p>An agent makes one over MCP: it does the task once with a <code>browser_steps</code> action, then calls <code>save_routine</code> with that action's id and names for the values to change at each run. A program saves one with <code>POST /v1/routines</code>. Either way it shows here, ready to run on any account of its platform.</p></section>`
    : table({
        caption: "The workspace's routines",
        rows: routines,
        empty: "No routine for this platform.",
        columns: [
          { title: "Routine", cell: (routine) => html`<a href="/app/routines/${routine.name}">${routine.name}</a>` },
          { title: "Platform", cell: (routine) => routine.platform },
          { title: "Version", cell: (routine) => String(routine.latest.version) },
          { title: "Description", cell: (routine) => routine.latest.description || html`<span class="note">none</span>` },
          { title: "Saved", cell: (routine) => time(routine.updated_at) },
          { title: "Last run", cell: (routine) => lastRun(lastRuns.get(routine.name)) },
        ],
      })
}`,
  });
}

/** A version's params, as a person reads them: names, with which are required and which secret. */
function paramsWords(version: RoutineVersion): Html {
  const names = Object.keys(version.params.properties);
  if (names.length === 0) return html`<span class="note">none</span>`;
  const required = new Set(version.params.required ?? []);
  const secrets = new Set(secretParams(version.params));
  return html`${names.map((name, index) => html`${index > 0 ? ", " : ""}<code>${name}</code>${secrets.has(name) ? " (secret)" : ""}${required.has(name) ? "" : " (optional)"}`)}`;
}

async function routinePage(
  engine: Engine,
  viewer: Viewer,
  principal: Principal,
  routine: Routine,
  options: { account_id: string; refused?: Refused; deleteError?: string },
): Promise<Html> {
  const { latest } = routine;
  const runs = await engine.routines.runs(principal, routine.name, 10);
  const accounts = new Map((await engine.accounts.list(principal)).map((account) => [account.id, account.username]));
  const versions = routine.versions ?? [latest];
  const canAct = may(principal, "act");
  return page({
    title: routine.name,
    viewer,
    section: "routines",
    body: html`<h1>${routine.name}</h1>
<div class="grid">
<div>
  <section class="card" aria-labelledby="steps-title">
    <h2 id="steps-title">Steps of version ${latest.version}</h2>
    ${latest.description ? html`<p>${latest.description}</p>` : ""}
    <ol class="steps">${latest.steps.map((step) => html`<li><code>${stepWords(step)}</code></li>`)}</ol>
  </section>
  ${canAct ? await runForm(engine, viewer, principal, routine, options) : ""}
  <section aria-labelledby="runs-title">
    <h2 id="runs-title">Last runs</h2>
    ${table({
      caption: "The routine's last runs, newest first",
      rows: runs,
      empty: "It has not run yet.",
      columns: [
        { title: "Action", cell: (action) => html`<a href="/app/actions/${action.id}">${action.id}</a>` },
        { title: "Account", cell: (action) => accounts.get(action.account_id) ?? "(removed account)" },
        { title: "Status", cell: (action) => status(action.status) },
        { title: "Version", cell: (action) => String(action.params.version ?? "") },
        { title: "Created", cell: (action) => time(action.created_at) },
      ],
    })}
  </section>
  <section aria-labelledby="versions-title" class="spaced">
    <h2 id="versions-title">Versions</h2>
    ${table({
      caption: "Every version, newest first",
      rows: versions,
      empty: "",
      columns: [
        { title: "Version", cell: (version) => String(version.version) },
        { title: "Saved", cell: (version) => time(version.created_at) },
        { title: "Saved from", cell: (version) => (version.from_action_id ? html`<a href="/app/actions/${version.from_action_id}">${version.from_action_id}</a>` : html`<span class="note">its steps, sent as they are</span>`) },
        { title: "Params", cell: paramsWords },
      ],
    })}
  </section>
</div>
<div>
  <aside class="card" aria-label="Details">
    <dl class="facts">
      <dt>Platform</dt><dd>${routine.platform}</dd>
      <dt>Latest version</dt><dd>${latest.version}</dd>
      <dt>Saved</dt><dd>${time(routine.updated_at)}</dd>
      <dt>First saved</dt><dd>${time(routine.created_at)}</dd>
      <dt>Result</dt><dd>${latest.steps.some((step) => "extract_text" in step) ? latest.steps.flatMap((step) => ("extract_text" in step ? [step.as] : [])).join(", ") : html`<span class="note">nothing read</span>`}</dd>
    </dl>
  </aside>
  ${canAct
    ? html`<form method="post" action="/app/routines/${routine.name}/delete" class="card" aria-labelledby="delete-title">
    ${csrfField(viewer)}
    <h2 id="delete-title">Delete the routine</h2>
    <p class="note">It can no longer run. Its versions are kept, so the actions that ran them stay readable; saving the name again continues its numbering.</p>
    ${errorBox(options.deleteError)}
    <label class="check"><input type="checkbox" name="confirm" value="yes" required> Yes, delete ${routine.name}</label>
    <button type="submit" class="danger">Delete</button>
  </form>`
    : ""}
</div>
</div>`,
  });
}

/** The run form: an account of the routine's platform, then the fields of its params schema. */
async function runForm(engine: Engine, viewer: Viewer, principal: Principal, routine: Routine, options: { account_id: string; refused?: Refused }): Promise<Html> {
  const accounts = (await engine.accounts.list(principal)).filter((account) => account.platform === routine.platform);
  const refused = options.refused;
  const chosen = refused?.account_id ?? options.account_id;
  const price = ACTION_PRICES.routine;
  return html`<form method="post" action="/app/routines/${routine.name}/run" class="card" aria-labelledby="run-title">
  ${csrfField(viewer)}
  <h2 id="run-title">Run it</h2>
  ${
    accounts.length === 0
      ? html`<p>There is no ${routine.platform} account to run it as. ${may(principal, "manage_accounts") ? html`<a href="/app/accounts">Add an account</a> first.` : "An admin adds accounts."}</p>`
      : html`<p class="note">Runs version ${routine.latest.version}. Costs ${price} credit${price === 1 ? "" : "s"} when it succeeds.</p>
  ${errorBox(refused?.message)}
  <div class="field"><label for="run-account">Account</label><select id="run-account" name="account_id" required>
    ${accounts.map((account) => html`<option value="${account.id}"${account.id === chosen ? html` selected` : ""}>${account.username} (${account.status})</option>`)}
  </select>${refused?.errors.account_id ? html`<p class="field-error">${refused.errors.account_id}</p>` : ""}</div>
  ${paramInputs(routine.latest.params, refused?.values ?? {}, refused?.errors ?? {})}
  <button type="submit">Run</button>`
  }
</form>`;
}
