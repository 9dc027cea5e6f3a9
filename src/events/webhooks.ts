import { randomBytes } from "node:crypto";
import { AppError } from "../domain/errors.js";
import type { Principal } from "../domain/keys.js";
import { EVENT_TYPES, type PublicWebhook, type PublicWebhookDelivery } from "../domain/public.js";
import type { EventType, WebhookDeliveryRecord, WebhookEndpointRecord } from "../store/index.js";
import { requirePermission } from "../engine/access/index.js";
import type { EngineCore } from "../engine/core.js";
import { newId } from "../engine/ids.js";
import { WakeAt } from "../engine/execution/wake-up.js";
import { TargetRefused, parseWebhookUrl, resolveTarget } from "./webhook-target.js";
import { WebhookDispatcher, type DispatcherOptions } from "./webhook-dispatcher.js";
import { WebhookThread, type ThreadStore } from "./webhook-thread.js";

/** Webhook delivery (DESIGN §13): private targets allowed or not (default not), the waits between attempts, and where its thread is. */
export type WebhookOptions = DispatcherOptions & {
  /** Where a delivery thread finds the store: given, deliveries run on their own thread (`webhook-thread.ts`); else on this event loop, on the engine's clock. */
  thread?: ThreadStore | undefined;
};

/** A workspace's webhook endpoints, and the delivery of their events (on its own thread or this event loop). */
export class Webhooks {
  readonly #delivery: WebhookDispatcher | WebhookThread;
  readonly #allowPrivate: boolean;
  #kick = (): void => this.#delivery.kick();
  /** When the heartbeat's survey says a delivery is due (`dueAt`). */
  readonly #due: WakeAt;
  #stopQueued: (() => void) | undefined;

  constructor(
    private readonly core: EngineCore,
    options: WebhookOptions = { allowPrivate: false },
  ) {
    const { thread, ...dispatcher } = options;
    this.#allowPrivate = options.allowPrivate ?? false;
    this.#delivery = thread
      ? new WebhookThread(core.store, thread, dispatcher, core.logger, () => core.publicUrl)
      : new WebhookDispatcher({ store: core.store, clock: core.lifecycle.clock, logger: core.logger, publicUrl: () => core.publicUrl }, dispatcher);
    this.#due = new WakeAt(core.lifecycle.clock, this.#kick);
  }

  /** Starts delivering; deliveries queued here are sent once they commit. */
  start(): void {
    this.#delivery.start();
    this.#stopQueued = this.core.store.webhooks.onQueued(this.#kick);
  }

  /**
   * The earliest delivery that may be sent next is due at `at` (the heartbeat's survey of the
   * store): a round starts then. So a retry another coordinator left, or a claim whose dispatcher
   * died, is sent without anybody polling for it.
   */
  dueAt(at: string | undefined): void {
    this.#due.at(at);
  }

  async stop(): Promise<void> {
    this.#due.stop();
    this.#stopQueued?.();
    await this.#delivery.stop();
  }

  /** The public URL live links in events are built on, once known. */
  setPublicUrl(url: string): void {
    if (this.#delivery instanceof WebhookThread) this.#delivery.setPublicUrl(url);
  }

  create(principal: Principal, input: { url: string; events?: EventType[] | undefined }): Promise<PublicWebhook> {
    return createWebhook(this.core, principal, input, this.#allowPrivate);
  }
  list(principal: Principal): Promise<PublicWebhook[]> {
    return listWebhooks(this.core, principal);
  }
  delete(principal: Principal, id: string): Promise<void> {
    return deleteWebhook(this.core, principal, id);
  }
  deliveries(principal: Principal, id: string, options: { limit: number; cursor?: string | undefined }): Promise<{ data: PublicWebhookDelivery[]; next_cursor?: string }> {
    return listDeliveries(this.core, principal, id, options);
  }
  async retryDelivery(principal: Principal, endpointId: string, deliveryId: string): Promise<PublicWebhookDelivery> {
    const delivery = await retryDelivery(this.core, principal, endpointId, deliveryId);
    this.#delivery.kick();
    return delivery;
  }
}

/** Webhook endpoints (DESIGN §13): created by admins, one signing secret each, shown once. */
export async function createWebhook(core: EngineCore, principal: Principal, input: { url: string; events?: EventType[] | undefined }, allowPrivate: boolean): Promise<PublicWebhook> {
  requirePermission(principal, "manage_webhooks");
  const url = parseWebhookUrl(input.url);
  try {
    await resolveTarget(url.hostname, allowPrivate);
  } catch (error) {
    if (!(error instanceof TargetRefused)) throw error;
    throw new AppError("invalid_request", `The webhook URL is refused: ${error.message}`, { issues: [{ path: "body.url", message: error.message }] });
  }
  const secret = `whsec_${randomBytes(32).toString("base64")}`;
  const endpoint = {
    id: newId("whe"),
    workspace_id: principal.workspaceId,
    url: url.toString(),
    events: input.events ? [...new Set(input.events)] : undefined,
    account_ids: principal.accountIds ? [...principal.accountIds] : undefined,
    created_at: core.lifecycle.now(),
  };
  await core.store.webhooks.insertEndpoint(endpoint, secret);
  return { ...presentWebhook((await core.store.webhooks.endpoint(endpoint.id))!), secret };
}

export async function listWebhooks(core: EngineCore, principal: Principal): Promise<PublicWebhook[]> {
  requirePermission(principal, "manage_webhooks");
  return (await core.store.webhooks.endpoints(principal.workspaceId))
    .filter((endpoint) => withinAllowList(principal, endpoint))
    .map(presentWebhook);
}

/** A key limited to some accounts sees only endpoints that reach none beyond them (those it could have made). */
function withinAllowList(principal: Principal, endpoint: WebhookEndpointRecord): boolean {
  const allowed = principal.accountIds;
  return !allowed || (endpoint.account_ids !== undefined && endpoint.account_ids.every((id) => allowed.includes(id)));
}

export async function deleteWebhook(core: EngineCore, principal: Principal, id: string): Promise<void> {
  const endpoint = await visibleEndpoint(core, principal, id);
  await core.store.webhooks.deleteEndpoint(endpoint.id);
}

export async function listDeliveries(
  core: EngineCore,
  principal: Principal,
  id: string,
  options: { limit: number; cursor?: string | undefined },
): Promise<{ data: PublicWebhookDelivery[]; next_cursor?: string }> {
  const endpoint = await visibleEndpoint(core, principal, id);
  const before = options.cursor === undefined ? undefined : Number(options.cursor);
  if (before !== undefined && !Number.isSafeInteger(before)) throw new AppError("invalid_request", "cursor is not one this list gave.", { cursor: options.cursor });
  const rows = await core.store.webhooks.deliveries(endpoint.id, options.limit + 1, before);
  const page = rows.slice(0, options.limit);
  return { data: page.map(presentDelivery), ...(rows.length > options.limit ? { next_cursor: String(page.at(-1)!.event_seq) } : {}) };
}

/** Sends a delivery again now, whatever its state; an endpoint disabled for failing is not re-enabled by it. */
export async function retryDelivery(core: EngineCore, principal: Principal, endpointId: string, deliveryId: string): Promise<PublicWebhookDelivery> {
  const endpoint = await visibleEndpoint(core, principal, endpointId);
  const delivery = await core.store.webhooks.delivery(deliveryId);
  if (!delivery || delivery.endpoint_id !== endpoint.id) throw new AppError("not_found", "No such delivery.", { delivery_id: deliveryId });
  if (endpoint.disabled_at) throw new AppError("conflict", `The endpoint is disabled (${endpoint.disabled_reason ?? "failing"}): create it again to receive events.`);
  await core.store.webhooks.retry(delivery.id, core.lifecycle.now());
  return presentDelivery((await core.store.webhooks.delivery(delivery.id))!);
}

async function visibleEndpoint(core: EngineCore, principal: Principal, id: string): Promise<WebhookEndpointRecord> {
  requirePermission(principal, "manage_webhooks");
  const endpoint = await core.store.webhooks.endpoint(id);
  if (!endpoint || endpoint.workspace_id !== principal.workspaceId) throw new AppError("not_found", "No such webhook.", { webhook_id: id });
  if (!withinAllowList(principal, endpoint)) throw new AppError("forbidden", "This key may not manage a webhook that reaches accounts outside its allow-list.", { webhook_id: id });
  return endpoint;
}

function presentWebhook(endpoint: WebhookEndpointRecord): PublicWebhook {
  return {
    id: endpoint.id,
    object: "webhook",
    url: endpoint.url,
    events: endpoint.events ?? [...EVENT_TYPES],
    status: endpoint.disabled_at ? "disabled" : "enabled",
    ...(endpoint.disabled_reason ? { disabled_reason: endpoint.disabled_reason } : {}),
    ...(endpoint.failing_since ? { failing_since: endpoint.failing_since } : {}),
    created_at: endpoint.created_at,
  };
}

function presentDelivery(delivery: WebhookDeliveryRecord): PublicWebhookDelivery {
  return {
    id: delivery.id,
    object: "webhook_delivery",
    event_id: delivery.event_id,
    event_type: delivery.event_type,
    subject_id: delivery.subject_id,
    state: delivery.state,
    attempts: delivery.attempts,
    ...(delivery.state === "pending" ? { next_attempt_at: delivery.next_attempt_at } : {}),
    ...(delivery.last_attempt_at ? { last_attempt_at: delivery.last_attempt_at } : {}),
    ...(delivery.last_status !== undefined ? { last_status: delivery.last_status } : {}),
    ...(delivery.last_error ? { last_error: delivery.last_error } : {}),
    created_at: delivery.created_at,
    ...(delivery.delivered_at ? { delivered_at: delivery.delivered_at } : {}),
  };
}
