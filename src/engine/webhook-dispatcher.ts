import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { retryWhileBusy } from "../store/busy.js";
import type { Store, WebhookDeliveryRecord } from "../store/index.js";
import type { Clock } from "./clock.js";
import type { Logger } from "./logger.js";
import { presentEvent } from "./webhooks.js";
import { postWebhook, type AttemptResult } from "./webhook-target.js";

/** After a failed attempt, the wait before the next: the first retry within 10 s, then growing. */
export const RETRY_DELAYS_MS = [5, 30, 120, 600, 1_800, 3_600, 7_200, 14_400, 28_800, 43_200].map((seconds) => seconds * 1000);
/** A delivery is retried this long (≥ 24 h) before it is given up… */
export const GIVE_UP_AFTER_MS = 72 * 60 * 60 * 1000;
/** …and an endpoint whose every attempt has failed this long is disabled. */
export const DISABLE_AFTER_MS = 72 * 60 * 60 * 1000;

const LEASE_MS = 60_000;
const BATCH = 32;
/** Signers kept per endpoint (a secret is unsealed once, not per delivery); an endpoint's secret never changes. */
const MAX_SIGNERS = 1_000;

export interface DispatcherOptions {
  /** Private and loopback targets allowed (`ACTION_SERVICE_WEBHOOK_ALLOW_PRIVATE`). */
  allowPrivate: boolean;
  intervalMs?: number;
  timeoutMs?: number;
  /** The waits between attempts (tests shorten them); `RETRY_DELAYS_MS` by default. */
  retryDelaysMs?: readonly number[];
}

/** What the dispatcher works with: in the engine's process, or on its own thread (`webhook-thread.ts`). */
export interface DispatcherParts {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** This process's public URL, for the live links in `needs_input` events. */
  publicUrl(): string;
}

type Attempt = { delivery: WebhookDeliveryRecord; result: AttemptResult };

/**
 * Sends the outbox's webhook deliveries (DESIGN §13) from the store: each claimed with a lease, so
 * several processes share the work and a crashed one's claims are taken over; in order per action
 * and endpoint; signed per Standard Webhooks; retried with backoff until a 2xx.
 */
export class WebhookDispatcher {
  readonly #id = `dispatcher_${randomBytes(8).toString("hex")}`;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  readonly #signers = new Map<string, Webhook>();

  constructor(
    private readonly parts: DispatcherParts,
    private readonly options: DispatcherOptions,
  ) {}

  start(): void {
    this.#stopped = false;
    this.#timer = setInterval(() => this.kick(), this.options.intervalMs ?? 500);
    this.#timer.unref();
    this.kick();
  }

  /** Looks for due deliveries now (a new event has committed). */
  kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#drain()
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
    clearInterval(this.#timer);
    await this.#running;
  }

  /** Claims a batch, sends it, and records every outcome in one transaction; until nothing is due. */
  async #drain(): Promise<void> {
    const { store, clock } = this.parts;
    for (;;) {
      const now = clock.now();
      const claimed = await retryWhileBusy(() =>
        store.transaction(() => store.webhooks.claimDue(now.toISOString(), this.#id, new Date(now.getTime() + LEASE_MS).toISOString(), BATCH)),
      );
      if (claimed.length === 0 || this.#stopped) return;
      const attempts = (await Promise.all(claimed.map((delivery) => this.#deliver(delivery)))).filter((attempt) => attempt !== undefined);
      await retryWhileBusy(() => store.transaction(() => this.#record(attempts)));
    }
  }

  async #deliver(delivery: WebhookDeliveryRecord): Promise<Attempt | undefined> {
    const { store, clock } = this.parts;
    const endpoint = store.webhooks.endpoint(delivery.endpoint_id);
    const event = store.events.bySeq(delivery.event_seq);
    if (!endpoint || !event) return undefined;
    const body = JSON.stringify(presentEvent({ store, publicUrl: this.parts.publicUrl() }, event));
    const sentAt = clock.now();
    const signature = this.#signer(endpoint.id).sign(event.id, sentAt, body);
    const headers = { "webhook-id": event.id, "webhook-timestamp": String(Math.floor(sentAt.getTime() / 1000)), "webhook-signature": signature };
    const result = await postWebhook(endpoint.url, body, headers, { allowPrivate: this.options.allowPrivate, timeoutMs: this.options.timeoutMs ?? 10_000 });
    return { delivery, result };
  }

  #signer(endpointId: string): Webhook {
    let signer = this.#signers.get(endpointId);
    if (!signer) {
      if (this.#signers.size >= MAX_SIGNERS) this.#signers.clear();
      signer = new Webhook(this.parts.store.webhooks.secret(endpointId));
      this.#signers.set(endpointId, signer);
    }
    return signer;
  }

  #record(attempts: readonly Attempt[]): void {
    const { store, clock } = this.parts;
    const now = clock.now();
    const iso = now.toISOString();
    const delays = this.options.retryDelaysMs ?? RETRY_DELAYS_MS;
    for (const { delivery, result } of attempts) {
      const status = "status" in result ? result.status : undefined;
      const error = "error" in result ? result.error : undefined;
      if (status !== undefined && status >= 200 && status < 300) {
        store.webhooks.recordAttempt(delivery.id, this.#id, { state: "succeeded", status, error: undefined, nextAttemptAt: iso, now: iso });
        store.webhooks.markHealthy(delivery.endpoint_id);
        continue;
      }
      const givenUp = now.getTime() - Date.parse(delivery.created_at) >= GIVE_UP_AFTER_MS;
      const delay = delays[Math.min(delivery.attempts, delays.length - 1)]!;
      store.webhooks.recordAttempt(delivery.id, this.#id, { state: givenUp ? "failed" : "pending", status, error, nextAttemptAt: new Date(now.getTime() + delay).toISOString(), now: iso });
      store.webhooks.markFailing(delivery.endpoint_id, iso);
      const endpoint = store.webhooks.endpoint(delivery.endpoint_id);
      if (endpoint?.failing_since && !endpoint.disabled_at && now.getTime() - Date.parse(endpoint.failing_since) >= DISABLE_AFTER_MS) {
        const reason = `Every delivery since ${endpoint.failing_since} failed (last: ${status !== undefined ? `HTTP ${status}` : error}).`;
        store.webhooks.disable(endpoint.id, reason, iso);
      }
    }
  }
}
