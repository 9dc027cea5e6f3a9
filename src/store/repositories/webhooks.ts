import { timeIn } from "../database-time.js";
import type { Queries } from "../queries.js";
import type { Sealer } from "../crypto.js";
import type { EventType } from "./events.js";
import { firstOfItsSubject, nextDeliveryAt } from "./work-due.js";

/** An event as `fanOutAll` needs it. */
type FannedOutEvent = { seq: number; workspace_id: string; type: EventType; account_id: string; subject_id: string; created_at: string };

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

const ENDPOINT = ["id", "workspace_id", "url", "events", "account_ids", "failing_since", "disabled_at", "disabled_reason", "created_at"] as const;

const DELIVERY_COLUMNS = [
  "d.id",
  "d.endpoint_id",
  "d.event_seq",
  "e.id as event_id",
  "e.type as event_type",
  "d.subject_id",
  "d.state",
  "d.attempts",
  "d.next_attempt_at",
  "d.last_attempt_at",
  "d.last_status",
  "d.last_error",
  "d.created_at",
  "d.delivered_at",
] as const;

/** Webhook endpoints (secrets sealed) and their deliveries: the durable queue of what to send where. */
export class WebhookRepository {
  readonly #queued = new Set<() => void>();

  constructor(
    private readonly q: Queries,
    private readonly sealer: Sealer,
  ) {}

  /**
   * Calls `listener` once deliveries this store queued have committed (`fanOutAll`): the dispatcher
   * sends them at once, whatever change queued them. Other processes' are theirs to send (the
   * heartbeat's survey backs them up). Returns the unsubscribe.
   */
  onQueued(listener: () => void): () => void {
    this.#queued.add(listener);
    return () => this.#queued.delete(listener);
  }

  async insertEndpoint(endpoint: Omit<WebhookEndpointRecord, "failing_since" | "disabled_at" | "disabled_reason">, secret: string): Promise<void> {
    await this.q.db
      .insertInto("webhook_endpoints")
      .values({
        id: endpoint.id,
        workspace_id: endpoint.workspace_id,
        url: endpoint.url,
        events: endpoint.events ? JSON.stringify(endpoint.events) : null,
        account_ids: endpoint.account_ids ? JSON.stringify(endpoint.account_ids) : null,
        secret_sealed: this.sealer.seal(secret, `webhook:${endpoint.id}:secret`),
        created_at: endpoint.created_at,
      })
      .execute();
  }

  async endpoint(id: string): Promise<WebhookEndpointRecord | undefined> {
    const row = await this.q.db.selectFrom("webhook_endpoints").select(ENDPOINT).where("id", "=", id).executeTakeFirst();
    return row && toEndpoint(row);
  }

  async endpoints(workspaceId: string): Promise<WebhookEndpointRecord[]> {
    const rows = await this.q.db.selectFrom("webhook_endpoints").select(ENDPOINT).where("workspace_id", "=", workspaceId).orderBy("created_at").orderBy("id").execute();
    return rows.map(toEndpoint);
  }

  async secret(id: string): Promise<string> {
    const row = await this.q.db.selectFrom("webhook_endpoints").select("secret_sealed").where("id", "=", id).executeTakeFirstOrThrow();
    return this.sealer.open(row.secret_sealed, `webhook:${id}:secret`);
  }

  async deleteEndpoint(id: string): Promise<void> {
    await this.q.db.deleteFrom("webhook_endpoints").where("id", "=", id).execute();
  }

  /**
   * Locks these endpoints' rows (PostgreSQL; SQLite's one writer is the lock already), in id order,
   * before their deliveries are written: deleting an endpoint locks its row and then its deliveries'
   * (the cascade), so writing a delivery first and its endpoint second could deadlock with it.
   */
  async lockEndpoints(ids: readonly string[]): Promise<void> {
    if (this.q.adapter.dialect !== "postgres" || ids.length === 0) return;
    await this.q.db.selectFrom("webhook_endpoints").select("id").where("id", "in", [...new Set(ids)].sort()).orderBy("id").forUpdate().execute();
  }

  /** A failed attempt: the endpoint is failing from then on, until a success. */
  async markFailing(id: string, now: string): Promise<void> {
    await this.q.db
      .updateTable("webhook_endpoints")
      .set((eb) => ({ failing_since: eb.fn.coalesce("failing_since", eb.val(now)) }))
      .where("id", "=", id)
      .execute();
  }

  async markHealthy(id: string): Promise<void> {
    await this.q.db.updateTable("webhook_endpoints").set({ failing_since: null }).where("id", "=", id).where("failing_since", "is not", null).execute();
  }

  /** Disables an endpoint; what it still had to receive is given up (call inside a transaction). */
  async disable(id: string, reason: string, now: string): Promise<void> {
    await this.q.db.updateTable("webhook_endpoints").set({ disabled_at: now, disabled_reason: reason }).where("id", "=", id).where("disabled_at", "is", null).execute();
    await this.q.db
      .updateTable("webhook_deliveries")
      .set((eb) => ({ state: "failed", last_error: eb.fn.coalesce("last_error", eb.val("the endpoint was disabled")), leased_by: null, leased_until: null }))
      .where("endpoint_id", "=", id)
      .where("state", "=", "pending")
      .execute();
  }

  /**
   * One pending delivery of each event to every enabled endpoint of its workspace that takes it
   * (its event types and account allow-list, read here: a workspace has a handful of endpoints), in
   * two statements whatever the events' number (a batched claim's).
   */
  async fanOutAll(events: readonly FannedOutEvent[], newId: () => string): Promise<number> {
    if (events.length === 0) return 0;
    const candidates = await this.q.db
      .selectFrom("webhook_endpoints")
      .select(["id", "workspace_id", "events", "account_ids"])
      .where("workspace_id", "in", [...new Set(events.map((event) => event.workspace_id))])
      .where("disabled_at", "is", null)
      .execute();
    const deliveries = events.flatMap((event) =>
      candidates
        .filter(
          (endpoint) =>
            endpoint.workspace_id === event.workspace_id &&
            (parseList<EventType>(endpoint.events)?.includes(event.type) ?? true) &&
            (parseList<string>(endpoint.account_ids)?.includes(event.account_id) ?? true),
        )
        .map((endpoint) => ({
          id: newId(),
          endpoint_id: endpoint.id,
          event_seq: event.seq,
          subject_id: event.subject_id,
          state: "pending",
          next_attempt_at: event.created_at,
          created_at: event.created_at,
        })),
    );
    if (deliveries.length === 0) return 0;
    await this.q.db.insertInto("webhook_deliveries").values(deliveries).execute();
    this.q.afterCommit(() => {
      for (const listener of this.#queued) listener();
    });
    return deliveries.length;
  }

  /** When the earliest delivery that may be sent next is due (`nextDeliveryAt`); undefined when none waits. */
  async nextDue(): Promise<string | undefined> {
    const row = await this.q.db.selectNoFrom(nextDeliveryAt().as("at")).executeTakeFirst();
    return row?.at ?? undefined;
  }

  /**
   * Leases up to `limit` deliveries that are due: pending, not leased, their endpoint enabled, and
   * no earlier delivery of the same subject to the same endpoint still pending (in order per action).
   * Walked in `next_attempt_at` order along its index, so a claim stops after `limit` rows however
   * long the backlog (order per action is kept by the NOT EXISTS, not by sorting everything). On
   * PostgreSQL the rows are locked `FOR UPDATE SKIP LOCKED`: coordinators claiming at once take
   * different deliveries, and each is sent by one. Whose lease has run out is judged by the
   * database's clock on PostgreSQL (`timeIn`), and the lease runs from it for as long as `now` to
   * `leaseUntil`: a coordinator whose clock is off neither takes another's lease early nor holds its
   * own too briefly. What is due is judged by the clock that wrote `next_attempt_at` (the
   * delivery thread's, `clockNow`): a schedule, not a lease, so a skewed machine retries early or
   * late by its skew and sends nothing twice. Call inside a transaction.
   */
  async claimDue(clockNow: string, runnerId: string, leaseUntil: string, limit: number): Promise<WebhookDeliveryRecord[]> {
    const { dialect } = this.q.adapter;
    const now = timeIn(dialect, clockNow);
    let query = this.q.db
      .selectFrom("webhook_deliveries as d")
      .innerJoin("webhook_endpoints as w", "w.id", "d.endpoint_id")
      .select("d.id")
      .where("d.state", "=", "pending")
      .where("d.next_attempt_at", "<=", clockNow)
      .where(({ or, eb }) => or([eb("d.leased_until", "is", null), eb("d.leased_until", "<=", now)]))
      .where("w.disabled_at", "is", null)
      .where(firstOfItsSubject)
      .orderBy("d.next_attempt_at")
      .limit(limit);
    if (this.q.adapter.dialect === "postgres") query = query.forUpdate("d").skipLocked();
    const ids = (await query.execute()).map((row) => row.id);
    if (ids.length === 0) return [];
    const leaseMs = Date.parse(leaseUntil) - Date.parse(clockNow);
    await this.q.db.updateTable("webhook_deliveries").set({ leased_by: runnerId, leased_until: timeIn(dialect, clockNow, leaseMs) }).where("id", "in", ids).execute();
    const rows = await this.q.db.selectFrom("webhook_deliveries as d").innerJoin("events as e", "e.seq", "d.event_seq").select(DELIVERY_COLUMNS).where("d.id", "in", ids).execute();
    const byId = new Map(rows.map((row) => [row.id, undefinedForNull(row) as unknown as WebhookDeliveryRecord]));
    // In the order claimed (due first), as the ids were read.
    return ids.map((id) => byId.get(id)!);
  }

  async delivery(id: string): Promise<WebhookDeliveryRecord | undefined> {
    const row = await this.q.db
      .selectFrom("webhook_deliveries as d")
      .innerJoin("events as e", "e.seq", "d.event_seq")
      .select(DELIVERY_COLUMNS)
      .where("d.id", "=", id)
      .executeTakeFirst();
    return row && (undefinedForNull(row) as unknown as WebhookDeliveryRecord);
  }

  /** An endpoint's deliveries, newest first, a page at a time. */
  async deliveries(endpointId: string, limit: number, beforeSeq?: number): Promise<WebhookDeliveryRecord[]> {
    let query = this.q.db
      .selectFrom("webhook_deliveries as d")
      .innerJoin("events as e", "e.seq", "d.event_seq")
      .select(DELIVERY_COLUMNS)
      .where("d.endpoint_id", "=", endpointId);
    if (beforeSeq !== undefined) query = query.where("d.event_seq", "<", beforeSeq);
    const rows = await query.orderBy("d.event_seq", "desc").limit(limit).execute();
    return rows.map((row) => undefinedForNull(row) as unknown as WebhookDeliveryRecord);
  }

  /** Records an attempt's outcome and releases the lease (only the runner holding it may). */
  async recordAttempt(
    id: string,
    runnerId: string,
    outcome: { state: DeliveryState; status: number | undefined; error: string | undefined; nextAttemptAt: string; now: string },
  ): Promise<boolean> {
    const result = await this.q.db
      .updateTable("webhook_deliveries")
      .set((eb) => ({
        state: outcome.state,
        attempts: eb("attempts", "+", 1),
        last_attempt_at: outcome.now,
        last_status: outcome.status ?? null,
        last_error: outcome.error ?? null,
        next_attempt_at: outcome.nextAttemptAt,
        ...(outcome.state === "succeeded" ? { delivered_at: outcome.now } : {}),
        leased_by: null,
        leased_until: null,
      }))
      .where("id", "=", id)
      .where("leased_by", "=", runnerId)
      .where("state", "=", "pending")
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  /** Sends a delivery again now (a manual retry): pending, due, its count of attempts kept. */
  async retry(id: string, now: string): Promise<void> {
    await this.q.db.updateTable("webhook_deliveries").set({ state: "pending", next_attempt_at: now, leased_by: null, leased_until: null }).where("id", "=", id).execute();
  }

  /** Deliveries not yet sent (a backlog's size, for benchmarks and health). */
  async pendingCount(): Promise<number> {
    const row = await this.q.db
      .selectFrom("webhook_deliveries")
      .select(({ fn }) => fn.countAll<number>().as("n"))
      .where("state", "=", "pending")
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** When the first attempt of a delivery was made (its retries stop some time after). */
  async firstAttemptAt(id: string): Promise<string> {
    const row = await this.q.db.selectFrom("webhook_deliveries").select("created_at").where("id", "=", id).executeTakeFirstOrThrow();
    return row.created_at;
  }
}
