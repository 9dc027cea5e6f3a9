import type { Hono } from "hono";
import { html } from "hono/html";
import { AppError } from "../../domain/errors.js";
import { EVENT_TYPES, type PublicWebhook } from "../../domain/public.js";
import type { Principal } from "../../domain/keys.js";
import type { Engine } from "../../engine/engine.js";
import { errorBox, field, readForm } from "../forms.js";
import { csrfField, page, table, time, type Html, type Viewer } from "../layout.js";
import { may, type WebEnv } from "../session.js";

/** Delivery states in the colours of the statuses they resemble. */
const DELIVERY_LOOK = { pending: "needs_input", succeeded: "succeeded", failed: "failed" } as const;

/** Webhooks (admins: add with the secret shown once, deliveries, retry, delete) and feedback (send; admins read). */
export function eventPages(web: Hono<WebEnv>, engine: Engine): void {
  web.get("/webhooks", async (c) => c.html(await webhooksPage(engine, c.get("viewer"), c.get("session").principal, { notice: c.req.query("done") === "deleted" ? "Webhook deleted." : undefined })));

  web.post("/webhooks", async (c) => {
    const { principal } = c.get("session");
    const form = await readForm(c);
    const events = form.all("events").filter((type): type is (typeof EVENT_TYPES)[number] => (EVENT_TYPES as readonly string[]).includes(type));
    try {
      const created = await engine.webhooks.create(principal, { url: form.get("url").trim(), ...(events.length > 0 && events.length < EVENT_TYPES.length ? { events } : {}) });
      return c.html(await webhooksPage(engine, c.get("viewer"), principal, { created }), 201);
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== "invalid_request") throw error;
      return c.html(await webhooksPage(engine, c.get("viewer"), principal, { error: error.message, url: form.get("url") }), 422);
    }
  });

  web.post("/webhooks/:id/delete", async (c) => {
    await readForm(c);
    await engine.webhooks.delete(c.get("session").principal, c.req.param("id"));
    return c.redirect("/app/webhooks?done=deleted", 303);
  });

  web.get("/webhooks/:id", async (c) => {
    const { principal } = c.get("session");
    const webhook = (await engine.webhooks.list(principal)).find((candidate) => candidate.id === c.req.param("id"));
    if (!webhook) throw new AppError("not_found", "No such webhook.");
    const deliveries = await engine.webhooks.deliveries(principal, webhook.id, { limit: 50, cursor: c.req.query("cursor") });
    const viewer = c.get("viewer");
    return c.html(
      page({
        title: "Webhook deliveries",
        viewer,
        section: "webhooks",
        notice: c.req.query("done") === "retried" ? "Sent again." : undefined,
        body: html`<h1>Deliveries to ${webhook.url}</h1>
${webhook.status === "disabled" ? html`<p class="error" role="alert">Disabled: ${webhook.disabled_reason ?? ""}</p>` : ""}
${table({
  caption: "Deliveries, newest first",
  rows: deliveries.data,
  empty: "Nothing sent yet.",
  columns: [
    { title: "Event", cell: (delivery) => html`<code>${delivery.event_id}</code> ${delivery.event_type}` },
    { title: "About", cell: (delivery) => (delivery.subject_id.startsWith("act_") ? html`<a href="/app/actions/${delivery.subject_id}">${delivery.subject_id}</a>` : html`<a href="/app/accounts/${delivery.subject_id}">${delivery.subject_id}</a>`) },
    { title: "State", cell: (delivery) => html`<span class="status ${DELIVERY_LOOK[delivery.state]}">${delivery.state}</span>` },
    { title: "Attempts", cell: (delivery) => `${delivery.attempts}${delivery.last_status !== undefined ? ` (HTTP ${delivery.last_status})` : ""}${delivery.last_error ? ` — ${delivery.last_error}` : ""}` },
    { title: "Last tried", cell: (delivery) => time(delivery.last_attempt_at) },
    {
      title: "Send again",
      cell: (delivery) => html`<form method="post" action="/app/webhooks/${webhook.id}/deliveries/${delivery.id}/retry">${csrfField(viewer)}<button type="submit" class="secondary small">Send again</button></form>`,
    },
  ],
})}
${deliveries.next_cursor ? html`<p class="pager"><a href="/app/webhooks/${webhook.id}?cursor=${deliveries.next_cursor}">Older deliveries</a></p>` : ""}`,
      }),
    );
  });

  web.post("/webhooks/:id/deliveries/:delivery/retry", async (c) => {
    await readForm(c);
    await engine.webhooks.retryDelivery(c.get("session").principal, c.req.param("id"), c.req.param("delivery"));
    return c.redirect(`/app/webhooks/${c.req.param("id")}?done=retried`, 303);
  });

  web.get("/feedback", async (c) => {
    const { principal } = c.get("session");
    const feedback = await engine.feedback.list(principal, { limit: 50, cursor: c.req.query("cursor") });
    return c.html(
      page({
        title: "Feedback",
        viewer: c.get("viewer"),
        section: "feedback",
        body: html`<h1>Feedback</h1>
${table({
  caption: "Feedback sent by this workspace's keys, newest first",
  rows: feedback.data,
  empty: "No feedback yet.",
  columns: [
    { title: "When", cell: (item) => time(item.created_at) },
    { title: "Message", cell: (item) => item.message },
    { title: "Action", cell: (item) => (item.action_id ? html`<a href="/app/actions/${item.action_id}">${item.type ?? ""} on ${item.platform ?? ""}</a>${item.error ? html` <code>${item.error.code}</code>` : ""}` : "") },
    { title: "Page at failure", cell: (item) => (item.has_screenshot ? html`<a href="/app/feedback/${item.id}/screenshot" target="_blank" rel="noopener">screenshot</a>` : "") },
  ],
})}
${feedback.next_cursor ? html`<p class="pager"><a href="/app/feedback?cursor=${encodeURIComponent(feedback.next_cursor)}">Older feedback</a></p>` : ""}`,
      }),
    );
  });

  web.get("/feedback/:id/screenshot", async (c) => {
    const png = await engine.feedback.screenshot(c.get("session").principal, c.req.param("id"));
    return c.body(new Uint8Array(png), 200, { "Content-Type": "image/png" });
  });

  web.post("/feedback", async (c) => {
    const form = await readForm(c);
    const actionId = form.get("action_id");
    const message = form.get("message").trim();
    if (!message) throw new AppError("invalid_request", "Write what went wrong before sending.");
    await engine.feedback.send(c.get("session").principal, { message: message.slice(0, 5_000), ...(actionId ? { action_id: actionId } : {}) });
    return c.redirect(actionId ? `/app/actions/${actionId}?done=feedback` : "/app/actions", 303);
  });
}

async function webhooksPage(engine: Engine, viewer: Viewer, principal: Principal, options: { created?: PublicWebhook; error?: string; url?: string; notice?: string | undefined }): Promise<Html> {
  const webhooks = await engine.webhooks.list(principal);
  return page({
    title: "Webhooks",
    viewer,
    section: "webhooks",
    notice: options.notice,
    body: html`<h1>Webhooks</h1>
<p class="note">Every action status change and account status change is POSTed to each endpoint, signed per Standard Webhooks with its secret, and retried until it answers 2xx.</p>
${options.created
  ? html`<section class="card" role="status" aria-labelledby="secret-title">
  <h2 id="secret-title">Signing secret of ${options.created.url}</h2>
  <p>Copy it now: it is shown only this once. Verify each delivery's <code>webhook-signature</code> with it.</p>
  <label for="webhook-secret">Secret</label>
  <input type="text" id="webhook-secret" class="secret" readonly value="${options.created.secret ?? ""}">
  <button type="button" class="secondary" data-copy="webhook-secret">Copy the secret</button>
</section>`
  : ""}
${table({
  caption: "Webhook endpoints",
  rows: webhooks,
  empty: "No webhooks.",
  columns: [
    { title: "URL", cell: (webhook) => html`<a href="/app/webhooks/${webhook.id}">${webhook.url}</a>` },
    { title: "Events", cell: (webhook) => webhook.events.join(", ") },
    { title: "State", cell: (webhook) => (webhook.status === "disabled" ? html`<span class="status failed">disabled</span> ${webhook.disabled_reason ?? ""}` : webhook.failing_since ? html`<span class="status needs_input">failing</span> since ${time(webhook.failing_since)}` : html`<span class="status connected">enabled</span>`) },
    { title: "Created", cell: (webhook) => time(webhook.created_at) },
    { title: "Delete", cell: (webhook) => html`<details><summary>Delete…</summary><form method="post" action="/app/webhooks/${webhook.id}/delete">${csrfField(viewer)}<button type="submit" class="danger small">Delete ${webhook.url}</button></form></details>` },
  ],
})}
<form method="post" action="/app/webhooks" class="card spaced" aria-labelledby="add-webhook-title">
  ${csrfField(viewer)}
  <h2 id="add-webhook-title">Add an endpoint</h2>
  ${errorBox(options.error)}
  ${field({ name: "url", label: "URL", type: "url", value: options.url, required: true, hint: "An https URL of yours that answers 2xx. Private and loopback addresses are refused unless the service allows them." })}
  <fieldset><legend>Events (none ticked: every type)</legend>
  ${EVENT_TYPES.map((type) => html`<label class="check"><input type="checkbox" name="events" value="${type}"> ${type}</label>`)}
  </fieldset>
  <button type="submit">Add the endpoint</button>
</form>`,
  });
}

/**
 * The feedback form under a failed action, for keys that act (a read_only key is offered no form
 * that sends anything; it may still use POST /v1/feedback).
 */
export function feedbackForm(viewer: Viewer, principal: Principal, actionId: string): Html {
  if (!may(principal, "act")) return html``;
  return html`<form method="post" action="/app/feedback" class="card" aria-labelledby="feedback-title">
  ${csrfField(viewer)}
  <input type="hidden" name="action_id" value="${actionId}">
  <h2 id="feedback-title">Send feedback</h2>
  <p class="note">Tell the people who run this service what went wrong; the action's error and, when one was kept, the page at the failure go with it.</p>
  <label for="feedback-message">What happened</label>
  <textarea id="feedback-message" name="message" required maxlength="5000" rows="3"></textarea>
  <button type="submit" class="secondary">Send feedback</button>
</form>`;
}
