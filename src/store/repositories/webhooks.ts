import type { Db } from "../database.js";
import type { Sealer } from "../crypto.js";
import type { EventType } from "./events.js";

/** A webhook endpoint, without its secret. */
export interface WebhookEndpointRecord {
  id: string;
  workspace_id: string;
  url: string;
  /** Event types it receives; undefined: every type. */
  events: EventType[] | undefined;
  /** Only these accounts' events (the allow-list of the key that made it); undefined: every account. */
  account_ids: string[] | undefined;
  failing_since: string | undefined;
  disabled_at: string | undefined;
  disabled_reason: string | undefined;
  created_at: string;
}

export type DeliveryState = "pending" | "succeeded" | "failed";

export interface WebhookDeliveryRecord {
  id: string;
  endpoint_id: string;
  event_seq: number;
  /** The event's id: the `webhook-id` of every attempt. */
  event_id: string;
  event_type: EventType;
  subject_id: string;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: string;
  last_attempt_at: string | undefined;
  last_status: number | undefined;
  last_error: string | undefined;
  created_at: string;
  delivered_at: string | undefined;
}

const undefinedForNull = <T extends object>(row: T): T => Object.fromEntries(Object.entries(row).map(([name, value]) => [name, value ?? undefined])) as T;
const parseList = <T>(value: unknown): T[] | undefined => (typeof value === "string" ? (JSON.parse(value) as T[]) : undefined);

function toEndpoint(row: Record<string, unknown>): WebhookEndpointRecord {
  const { secret_sealed: _secret, ...rest } = undefinedForNull(row);
  return { ...(rest as unknown as WebhookEndpointRecord), events: parseList<EventType>(row.events), account_ids: parseList<string>(row.account_ids) };
}

const DELIVERY_COLUMNS = `d.id, d.endpoint_id, d.event_seq, e.id AS event_id, e.type AS event_type, d.subject_id, d.state, d.attempts, d.next_attempt_at,
  d.last_attempt_at, d.last_status, d.last_error, d.created_at, d.delivered_at`;

/** Webhook endpoints (secrets sealed) and their deliveries: the durable queue of what to send where. */
export class WebhookRepository {
  constructor(
    private readonly db: Db,
    private readonly sealer: Sealer,
  ) {}

  insertEndpoint(endpoint: Omit<WebhookEndpointRecord, "failing_since" | "disabled_at" | "disabled_reason">, secret: string): void {
    this.db
      .prepare(
        `INSERT INTO webhook_endpoints (id, workspace_id, url, events, account_ids, secret_sealed, created_at)
         VALUES (@id, @workspace_id, @url, @events, @account_ids, @secret_sealed, @created_at)`,
      )
      .run({
        ...endpoint,
        events: endpoint.events ? JSON.stringify(endpoint.events) : null,
        account_ids: endpoint.account_ids ? JSON.stringify(endpoint.account_ids) : null,
        secret_sealed: this.sealer.seal(secret, `webhook:${endpoint.id}:secret`),
      });
  }

  endpoint(id: string): WebhookEndpointRecord | undefined {
    const row = this.db.prepare("SELECT * FROM webhook_endpoints WHERE id = ?").get(id) as Record<string, unknown> | undefined;
    return row && toEndpoint(row);
  }

  endpoints(workspaceId: string): WebhookEndpointRecord[] {
    return (this.db.prepare("SELECT * FROM webhook_endpoints WHERE workspace_id = ? ORDER BY created_at, id").all(workspaceId) as Record<string, unknown>[]).map(toEndpoint);
  }

  secret(id: string): string {
    const sealed = this.db.prepare("SELECT secret_sealed FROM webhook_endpoints WHERE id = ?").pluck().get(id) as Buffer;
    return this.sealer.open(sealed, `webhook:${id}:secret`);
  }

  deleteEndpoint(id: string): void {
    this.db.prepare("DELETE FROM webhook_endpoints WHERE id = ?").run(id);
  }

  /** A failed attempt: the endpoint is failing from then on, until a success. */
  markFailing(id: string, now: string): void {
    this.db.prepare("UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, ?) WHERE id = ?").run(now, id);
  }

  markHealthy(id: string): void {
    this.db.prepare("UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL").run(id);
  }

  /** Disables an endpoint; what it still had to receive is given up. */
  disable(id: string, reason: string, now: string): void {
    this.db.prepare("UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL").run(now, reason, id);
    this.db.prepare("UPDATE webhook_deliveries SET state = 'failed', last_error = coalesce(last_error, 'the endpoint was disabled'), leased_by = NULL, leased_until = NULL WHERE endpoint_id = ? AND state = 'pending'").run(id);
  }

  /** One pending delivery of the event to every enabled endpoint of its workspace that takes it. */
  fanOut(event: { seq: number; workspace_id: string; type: EventType; account_id: string; subject_id: string; created_at: string }, newId: () => string): number {
    const endpoints = this.db
      .prepare(
        `SELECT id FROM webhook_endpoints WHERE workspace_id = @workspace_id AND disabled_at IS NULL
         AND (events IS NULL OR EXISTS (SELECT 1 FROM json_each(events) WHERE value = @type))
         AND (account_ids IS NULL OR EXISTS (SELECT 1 FROM json_each(account_ids) WHERE value = @account_id))`,
      )
      .pluck()
      .all(event) as string[];
    const insert = this.db.prepare(
      `INSERT INTO webhook_deliveries (id, endpoint_id, event_seq, subject_id, state, next_attempt_at, created_at)
       VALUES (?, ?, ?, ?, 'pending', ?, ?)`,
    );
    for (const endpointId of endpoints) insert.run(newId(), endpointId, event.seq, event.subject_id, event.created_at, event.created_at);
    return endpoints.length;
  }

  /**
   * Leases up to `limit` deliveries that are due: pending, not leased, their endpoint enabled, and
   * no earlier delivery of the same subject to the same endpoint still pending (in order per action).
   * Walked in `next_attempt_at` order along its index, so a claim stops after `limit` rows however
   * long the backlog (order per action is kept by the NOT EXISTS, not by sorting everything).
   */
  claimDue(now: string, runnerId: string, leaseUntil: string, limit: number): WebhookDeliveryRecord[] {
    const ids = this.db
      .prepare(
        `SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
         WHERE d.state = 'pending' AND d.next_attempt_at <= @now AND (d.leased_until IS NULL OR d.leased_until <= @now) AND w.disabled_at IS NULL
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p WHERE p.endpoint_id = d.endpoint_id AND p.subject_id = d.subject_id AND p.state = 'pending' AND p.event_seq < d.event_seq)
         ORDER BY d.next_attempt_at LIMIT @limit`,
      )
      .pluck()
      .all({ now, limit }) as string[];
    const lease = this.db.prepare("UPDATE webhook_deliveries SET leased_by = ?, leased_until = ? WHERE id = ?");
    for (const id of ids) lease.run(runnerId, leaseUntil, id);
    return ids.map((id) => this.delivery(id)!);
  }

  delivery(id: string): WebhookDeliveryRecord | undefined {
    const row = this.db.prepare(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.seq = d.event_seq WHERE d.id = ?`).get(id) as Record<string, unknown> | undefined;
    return row && (undefinedForNull(row) as unknown as WebhookDeliveryRecord);
  }

  /** An endpoint's deliveries, newest first, a page at a time. */
  deliveries(endpointId: string, limit: number, beforeSeq?: number): WebhookDeliveryRecord[] {
    return (
      this.db
        .prepare(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.seq = d.event_seq WHERE d.endpoint_id = ? AND d.event_seq < ? ORDER BY d.event_seq DESC LIMIT ?`)
        .all(endpointId, beforeSeq ?? Number.MAX_SAFE_INTEGER, limit) as Record<string, unknown>[]
    ).map((row) => undefinedForNull(row) as unknown as WebhookDeliveryRecord);
  }

  /** Records an attempt's outcome and releases the lease (only the runner holding it may). */
  recordAttempt(
    id: string,
    runnerId: string,
    outcome: { state: DeliveryState; status: number | undefined; error: string | undefined; nextAttemptAt: string; now: string },
  ): boolean {
    return (
      this.db
        .prepare(
          `UPDATE webhook_deliveries SET state = @state, attempts = attempts + 1, last_attempt_at = @now, last_status = @status, last_error = @error,
           next_attempt_at = @next, delivered_at = CASE WHEN @state = 'succeeded' THEN @now ELSE delivered_at END, leased_by = NULL, leased_until = NULL
           WHERE id = @id AND leased_by = @runner AND state = 'pending'`,
        )
        .run({ id, runner: runnerId, state: outcome.state, now: outcome.now, status: outcome.status ?? null, error: outcome.error ?? null, next: outcome.nextAttemptAt }).changes === 1
    );
  }

  /** Sends a delivery again now (a manual retry): pending, due, its count of attempts kept. */
  retry(id: string, now: string): void {
    this.db.prepare("UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = ?, leased_by = NULL, leased_until = NULL WHERE id = ?").run(now, id);
  }

  /** When the first attempt of a delivery was made (its retries stop some time after). */
  firstAttemptAt(id: string): string {
    return this.db.prepare("SELECT created_at FROM webhook_deliveries WHERE id = ?").pluck().get(id) as string;
  }
}
