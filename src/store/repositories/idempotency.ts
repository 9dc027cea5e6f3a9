import type { Queries } from "../queries.js";

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

const COLUMNS = ["workspace_id", "key", "request_hash", "state", "action_id", "payment_id", "created_at", "expires_at"] as const;

const toRecord = (row: { state: string; action_id: string | null; payment_id: string | null } & Omit<IdempotencyRecord, "state" | "action_id" | "payment_id">): IdempotencyRecord => ({
  ...row,
  state: row.state as IdempotencyRecord["state"],
  action_id: row.action_id ?? undefined,
  payment_id: row.payment_id ?? undefined,
});

export class IdempotencyRepository {
  constructor(private readonly q: Queries) {}

  async get(workspaceId: string, key: string, now: string): Promise<IdempotencyRecord | undefined> {
    const row = await this.q.db.selectFrom("idempotency_keys").select(COLUMNS).where("workspace_id", "=", workspaceId).where("key", "=", key).where("expires_at", ">", now).executeTakeFirst();
    return row && toRecord(row);
  }

  /** Claims the key for a request (replacing an expired or retryable record). */
  async begin(record: { workspace_id: string; key: string; request_hash: string; runner_id: string; created_at: string; expires_at: string }): Promise<void> {
    await this.q.db
      .insertInto("idempotency_keys")
      .values({ ...record, state: "in_flight" })
      .onConflict((oc) =>
        oc.columns(["workspace_id", "key"]).doUpdateSet((eb) => ({
          request_hash: eb.ref("excluded.request_hash"),
          state: "in_flight",
          runner_id: eb.ref("excluded.runner_id"),
          action_id: null,
          payment_id: null,
          response_status: null,
          created_at: eb.ref("excluded.created_at"),
          expires_at: eb.ref("excluded.expires_at"),
        })),
      )
      .execute();
  }

  async attachAction(workspaceId: string, key: string, actionId: string): Promise<void> {
    await this.q.db.updateTable("idempotency_keys").set({ action_id: actionId }).where("workspace_id", "=", workspaceId).where("key", "=", key).execute();
  }

  /** A top-up's key names its payment from the moment the payment is claimed (a crash leaves it answering for it). */
  async attachPayment(workspaceId: string, key: string, paymentId: string): Promise<void> {
    await this.q.db.updateTable("idempotency_keys").set({ payment_id: paymentId }).where("workspace_id", "=", workspaceId).where("key", "=", key).execute();
  }

  /** The request has answered: from now on the key replays its action. */
  async complete(workspaceId: string, key: string): Promise<void> {
    await this.q.db.updateTable("idempotency_keys").set({ state: "done" }).where("workspace_id", "=", workspaceId).where("key", "=", key).execute();
  }

  async forget(workspaceId: string, key: string): Promise<void> {
    await this.q.db.deleteFrom("idempotency_keys").where("workspace_id", "=", workspaceId).where("key", "=", key).execute();
  }

  /** Frees every key whose action failed in a way that must be retryable (`browser_unavailable`). */
  async forgetAction(actionId: string): Promise<void> {
    await this.q.db.deleteFrom("idempotency_keys").where("action_id", "=", actionId).execute();
  }

  /** Requests in flight in processes that are gone (no live lease): nobody will answer them. */
  async abandoned(now: string): Promise<IdempotencyRecord[]> {
    const rows = await this.q.db
      .selectFrom("idempotency_keys")
      .select(COLUMNS)
      .where("state", "=", "in_flight")
      .where(({ or, eb, selectFrom }) =>
        or([eb("runner_id", "is", null), eb("runner_id", "not in", selectFrom("runners").select("id").where("lease_expires_at", ">", now))]),
      )
      .execute();
    return rows.map(toRecord);
  }

  async purgeExpired(now: string): Promise<number> {
    const result = await this.q.db.deleteFrom("idempotency_keys").where("expires_at", "<=", now).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
