import type { Db } from "../database.js";

export interface IdempotencyRecord {
  workspace_id: string;
  key: string;
  request_hash: string;
  state: "in_flight" | "done";
  action_id: string | undefined;
  payment_id: string | undefined;
  created_at: string;
  expires_at: string;
}

const COLUMNS = "workspace_id, key, request_hash, state, action_id, payment_id, created_at, expires_at";

export class IdempotencyRepository {
  constructor(private readonly db: Db) {}

  get(workspaceId: string, key: string, now: string): IdempotencyRecord | undefined {
    const row = this.db.prepare(`SELECT ${COLUMNS} FROM idempotency_keys WHERE workspace_id = ? AND key = ? AND expires_at > ?`).get(workspaceId, key, now) as
      | Record<string, unknown>
      | undefined;
    if (!row) return undefined;
    return Object.fromEntries(Object.entries(row).map(([field, value]) => [field, value ?? undefined])) as unknown as IdempotencyRecord;
  }

  /** Claims the key for a request (replacing an expired or retryable record). */
  begin(record: { workspace_id: string; key: string; request_hash: string; runner_id: string; created_at: string; expires_at: string }): void {
    this.db
      .prepare(
        `INSERT INTO idempotency_keys (workspace_id, key, request_hash, state, runner_id, created_at, expires_at)
         VALUES (@workspace_id, @key, @request_hash, 'in_flight', @runner_id, @created_at, @expires_at)
         ON CONFLICT (workspace_id, key) DO UPDATE SET request_hash = excluded.request_hash, state = 'in_flight',
           runner_id = excluded.runner_id, action_id = NULL, payment_id = NULL, response_status = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at`,
      )
      .run(record);
  }

  attachAction(workspaceId: string, key: string, actionId: string): void {
    this.db.prepare("UPDATE idempotency_keys SET action_id = ? WHERE workspace_id = ? AND key = ?").run(actionId, workspaceId, key);
  }

  /** A top-up's key names its payment from the moment the payment is claimed (a crash leaves it answering for it). */
  attachPayment(workspaceId: string, key: string, paymentId: string): void {
    this.db.prepare("UPDATE idempotency_keys SET payment_id = ? WHERE workspace_id = ? AND key = ?").run(paymentId, workspaceId, key);
  }

  /** The request has answered: from now on the key replays its action. */
  complete(workspaceId: string, key: string): void {
    this.db.prepare("UPDATE idempotency_keys SET state = 'done' WHERE workspace_id = ? AND key = ?").run(workspaceId, key);
  }

  forget(workspaceId: string, key: string): void {
    this.db.prepare("DELETE FROM idempotency_keys WHERE workspace_id = ? AND key = ?").run(workspaceId, key);
  }

  /** Frees every key whose action failed in a way that must be retryable (`browser_unavailable`). */
  forgetAction(actionId: string): void {
    this.db.prepare("DELETE FROM idempotency_keys WHERE action_id = ?").run(actionId);
  }

  /** Requests in flight in processes that are gone (no live lease): nobody will answer them. */
  abandoned(now: string): IdempotencyRecord[] {
    return this.db
      .prepare(
        `SELECT ${COLUMNS} FROM idempotency_keys WHERE state = 'in_flight'
           AND (runner_id IS NULL OR runner_id NOT IN (SELECT id FROM runners WHERE lease_expires_at > ?))`,
      )
      .all(now) as IdempotencyRecord[];
  }

  purgeExpired(now: string): number {
    return this.db.prepare("DELETE FROM idempotency_keys WHERE expires_at <= ?").run(now).changes;
  }
}
