import type { ExpressionBuilder, OnConflictDatabase, OnConflictTables } from "kysely";
import type { Queries } from "../queries.js";
import type { Schema } from "../schema.js";

export interface IdempotencyRecord {
  workspace_id: string;
  key: string;
  request_hash: string;
  state: "in_flight" | "done";
  action_id: string | undefined;
  payment_id: string | undefined;
  /** The token of the request that claimed the key; undefined on records written before claims had one. */
  claim: string | undefined;
  created_at: string;
  expires_at: string;
}

const COLUMNS = ["workspace_id", "key", "request_hash", "state", "action_id", "payment_id", "claim", "created_at", "expires_at"] as const;

const toRecord = (
  row: { state: string; action_id: string | null; payment_id: string | null; claim: string | null } & Omit<IdempotencyRecord, "state" | "action_id" | "payment_id" | "claim">,
): IdempotencyRecord => ({
  ...row,
  state: row.state as IdempotencyRecord["state"],
  action_id: row.action_id ?? undefined,
  payment_id: row.payment_id ?? undefined,
  claim: row.claim ?? undefined,
});

/**
 * Which claim of a key a write is for (DESIGN §11 fencing): the write changes the record only while
 * it still carries that claim's token.
 */
export interface KeyFence {
  claim: string | undefined;
}

/** The record is still `fence`'s claim. */
const ofClaim = (fence: KeyFence) => (eb: ExpressionBuilder<Schema, "idempotency_keys">) =>
  fence.claim === undefined ? eb("claim", "is", null) : eb("claim", "=", fence.claim);

/** A record claimed again: the new request's, as inserted (`excluded`), in flight and naming nothing yet. */
const replacedBy = (eb: ExpressionBuilder<OnConflictDatabase<Schema, "idempotency_keys">, OnConflictTables<"idempotency_keys">>) =>
  ({
    request_hash: eb.ref("excluded.request_hash"),
    state: "in_flight",
    runner_id: eb.ref("excluded.runner_id"),
    claim: eb.ref("excluded.claim"),
    action_id: null,
    payment_id: null,
    response_status: null,
    created_at: eb.ref("excluded.created_at"),
    expires_at: eb.ref("excluded.expires_at"),
  }) as const;

export class IdempotencyRepository {
  constructor(private readonly q: Queries) {}

  async get(workspaceId: string, key: string, now: string): Promise<IdempotencyRecord | undefined> {
    const row = await this.q.db.selectFrom("idempotency_keys").select(COLUMNS).where("workspace_id", "=", workspaceId).where("key", "=", key).where("expires_at", ">", now).executeTakeFirst();
    return row && toRecord(row);
  }

  /**
   * Claims the key for a request under the token `claim` in one statement when no record of it is
   * live at `now` (none, or an expired one, which it replaces); false when one is, which this
   * leaves as it is. A new key — nearly every request's — costs this statement alone.
   */
  async claimIfFree(record: { workspace_id: string; key: string; request_hash: string; runner_id: string; claim: string; created_at: string; expires_at: string }, now: string): Promise<boolean> {
    const row = await this.q.db
      .insertInto("idempotency_keys")
      .values({ ...record, state: "in_flight" })
      .onConflict((oc) => oc.columns(["workspace_id", "key"]).doUpdateSet(replacedBy).where("idempotency_keys.expires_at", "<=", now))
      .returning("key")
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Claims the key for a request under the token `claim` (replacing an expired or retryable record). */
  async begin(record: { workspace_id: string; key: string; request_hash: string; runner_id: string; claim: string; created_at: string; expires_at: string }): Promise<void> {
    await this.q.db
      .insertInto("idempotency_keys")
      .values({ ...record, state: "in_flight" })
      .onConflict((oc) => oc.columns(["workspace_id", "key"]).doUpdateSet(replacedBy))
      .execute();
  }

  /**
   * Names the action the claim `claim` created, in one statement conditional on the key still being
   * that claim's, in flight and naming no action. False when it is not: the claim was settled (its
   * runner's lease ended) and perhaps claimed again; the caller must not keep the action.
   */
  attachAction(workspaceId: string, key: string, actionId: string, claim: string): Promise<boolean> {
    return this.#attach(workspaceId, key, claim, "action_id", actionId);
  }

  /**
   * A top-up's key names its payment from the moment the payment is claimed (a crash leaves it
   * answering for it), in one statement conditional on the key still being the claim `claim`'s, in
   * flight and naming no payment. False when it is not: the caller must not keep the payment's claim.
   */
  attachPayment(workspaceId: string, key: string, paymentId: string, claim: string): Promise<boolean> {
    return this.#attach(workspaceId, key, claim, "payment_id", paymentId);
  }

  /** Sets `column` while the key is still the claim `claim`'s, in flight and with `column` unset. */
  async #attach(workspaceId: string, key: string, claim: string, column: "action_id" | "payment_id", id: string): Promise<boolean> {
    const result = await this.q.db
      .updateTable("idempotency_keys")
      .set({ [column]: id })
      .where("workspace_id", "=", workspaceId)
      .where("key", "=", key)
      .where("claim", "=", claim)
      .where("state", "=", "in_flight")
      .where(column, "is", null)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  /** The request has answered: from now on the key replays what it created (only while the record is `fence`'s claim). */
  async complete(workspaceId: string, key: string, fence: KeyFence): Promise<void> {
    await this.q.db.updateTable("idempotency_keys").set({ state: "done" }).where("workspace_id", "=", workspaceId).where("key", "=", key).where(ofClaim(fence)).execute();
  }

  /** Frees the key (only while the record is `fence`'s claim: another request's claim is never dropped). */
  async forget(workspaceId: string, key: string, fence: KeyFence): Promise<void> {
    await this.q.db.deleteFrom("idempotency_keys").where("workspace_id", "=", workspaceId).where("key", "=", key).where(ofClaim(fence)).execute();
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
