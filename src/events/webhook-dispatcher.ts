import { AsyncResource } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import type { Store, WebhookDeliveryRecord } from "../store/index.js";
import type { Clock } from "../engine/clock.js";
import type { Logger } from "../engine/logger.js";
import { WakeAt } from "../engine/execution/wake-up.js";
import { presentEvent } from "./present-event.js";
import { postWebhook } from "./webhook-target.js";
import { writeHere, type Attempt, type DeliveryWriter } from "./webhook-writes.js";

const LEASE_MS = 60_000;
const BATCH = 32;
/** Signers kept per endpoint (a secret is unsealed once, not per delivery); an endpoint's secret never changes. */
const MAX_SIGNERS = 1_000;

export interface DispatcherOptions {
  /** Private and loopback targets allowed (`ACTION_SERVICE_WEBHOOK_ALLOW_PRIVATE`). */
  allowPrivate: boolean;
  timeoutMs?: number;
  /** The waits between attempts (tests shorten them); `RETRY_DELAYS_MS` (`webhook-writes.ts`) by default. */
  retryDelaysMs?: readonly number[];
}

/** What the dispatcher works with: in the engine's process, or on its own thread (`webhook-thread.ts`). */
export interface DispatcherParts {
  /** Where deliveries and their events are read (and written, unless `write` is given). */
  store: Store;
  /** Who does the claims and records (`webhook-writes.ts`): by default `store`'s connection; on the thread, the main thread. */
  write?: DeliveryWriter;
  clock: Clock;
  logger: Logger;
  /** This process's public URL, for the live links in `needs_input` events. */
  publicUrl(): string;
}

/**
 * Sends the outbox's webhook deliveries (DESIGN §13) from the store: each claimed with a lease, so
 * several processes share the work and a crashed one's claims are taken over; in order per action
 * and endpoint; signed per Standard Webhooks; retried with backoff until a 2xx. Nothing polls: a
 * round starts when a change commits here (`kick`), when the earliest attempt it left for later
 * comes due (read after every round that sent something), and when the heartbeat's survey of the
 * store says one is due (`Webhooks.dueAt`: another coordinator's retry, or a claim whose dispatcher died).
 */
export class WebhookDispatcher {
  readonly #id = `dispatcher_${randomBytes(8).toString("hex")}`;
  /** The next attempt due after a round (a retry's backoff, another dispatcher's claim ending). */
  readonly #next: WakeAt;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  readonly #signers = new Map<string, Webhook>();
  readonly #write: DeliveryWriter;
  /**
   * A round, in the asynchronous context the dispatcher was made in. A kick can come from inside a
   * transaction (a change announced by work that a caller's transaction wraps); a store call made
   * from that context would join that transaction (`store.transaction` follows its work through
   * awaits), so the round never starts in the context of whoever kicked.
   */
  readonly #round = AsyncResource.bind((): Promise<void> => this.#drain());

  constructor(
    private readonly parts: DispatcherParts,
    private readonly options: DispatcherOptions,
  ) {
    this.#write = parts.write ?? writeHere(parts.store);
    this.#next = new WakeAt(parts.clock, () => this.kick());
  }

  /** Sends what is due now (what waited while no process ran). */
  start(): void {
    this.#stopped = false;
    this.kick();
  }

  /** Looks for due deliveries now (a new event has committed). */
  kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#round()
      .catch((error: unknown) => this.parts.logger.warn({ err: error }, "webhook delivery round failed; the next one tries again"))
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.kick();
        }
      });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#next.stop();
    await this.#running;
  }

  /**
   * Claims a batch, sends it, and records every outcome in one transaction; until nothing is due or
   * the dispatcher stops. A batch once claimed is always sent and recorded, a stop meanwhile
   * included (`stop()` waits for it): dropped, its deliveries would stay leased for a minute and
   * hold back everything after them for their actions.
   */
  async #drain(): Promise<void> {
    const { clock } = this.parts;
    let sent = false;
    while (!this.#stopped) {
      const now = clock.now();
      const claimed = await this.#write("claim", { runnerId: this.#id, now: now.toISOString(), leaseUntil: new Date(now.getTime() + LEASE_MS).toISOString(), limit: BATCH });
      if (claimed.length === 0) break;
      const attempts = (await Promise.all(claimed.map((delivery) => this.#deliver(delivery)))).filter((attempt) => attempt !== undefined);
      await this.#write("record", { runnerId: this.#id, now: clock.now().toISOString(), retryDelaysMs: this.options.retryDelaysMs, attempts });
      sent = true;
    }
    // A failed attempt is tried again later, and a delivery behind a sent one may be due: one
    // timer for the earliest. A round that sent nothing leaves it as it was (no statement).
    if (sent && !this.#stopped) this.#next.at(await this.parts.store.webhooks.nextDue());
  }

  async #deliver(delivery: WebhookDeliveryRecord): Promise<Attempt | undefined> {
    const { store, clock } = this.parts;
    const endpoint = await store.webhooks.endpoint(delivery.endpoint_id);
    const event = await store.events.bySeq(delivery.event_seq);
    if (!endpoint || !event) return undefined;
    const body = JSON.stringify(await presentEvent({ store, publicUrl: this.parts.publicUrl() }, event));
    const signer = await this.#signer(endpoint.id);
    const sentAt = clock.now();
    const signature = signer.sign(event.id, sentAt, body);
    const headers = { "webhook-id": event.id, "webhook-timestamp": String(Math.floor(sentAt.getTime() / 1000)), "webhook-signature": signature };
    const result = await postWebhook(endpoint.url, body, headers, { allowPrivate: this.options.allowPrivate, timeoutMs: this.options.timeoutMs ?? 10_000 });
    return { delivery, result };
  }

  async #signer(endpointId: string): Promise<Webhook> {
    let signer = this.#signers.get(endpointId);
    if (!signer) {
      if (this.#signers.size >= MAX_SIGNERS) this.#signers.clear();
      signer = new Webhook(await this.parts.store.webhooks.secret(endpointId));
      this.#signers.set(endpointId, signer);
    }
    return signer;
  }
}
