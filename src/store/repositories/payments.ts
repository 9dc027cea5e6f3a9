import type { Queries } from "../queries.js";
import type { Sealer } from "../crypto.js";

export type PaymentStatus = "verifying" | "settling" | "settled" | "failed";

/** An x402 top-up payment (DESIGN §7), without its sealed payload. */
export interface PaymentRecord {
  id: string;
  workspace_id: string;
  network: string;
  asset: string;
  payer: string;
  nonce: string;
  credits: number;
  amount: string;
  status: PaymentStatus;
  reason: string | undefined;
  transaction_hash: string | undefined;
  runner_id: string | undefined;
  created_at: string;
  updated_at: string;
}

/** A claim on an authorization: what the top-up will pay, and the signed payload to keep sealed. */
export type PaymentClaim = Pick<PaymentRecord, "id" | "workspace_id" | "network" | "asset" | "payer" | "nonce" | "credits" | "amount"> & {
  payload: string;
  runner_id: string;
  now: string;
};

const COLUMNS = ["id", "workspace_id", "network", "asset", "payer", "nonce", "credits", "amount", "status", "reason", "transaction_hash", "runner_id", "created_at", "updated_at"] as const;

function toRecord(row: object): PaymentRecord {
  return Object.fromEntries(Object.entries(row).map(([field, value]) => [field, value ?? undefined])) as unknown as PaymentRecord;
}

export class PaymentRepository {
  constructor(
    private readonly q: Queries,
    private readonly sealer: Sealer,
  ) {}

  async get(id: string): Promise<PaymentRecord | undefined> {
    const row = await this.q.db.selectFrom("payments").select(COLUMNS).where("id", "=", id).executeTakeFirst();
    return row && toRecord(row);
  }

  /**
   * Claims an authorization for this request: a new one, or one whose earlier attempt failed
   * (the facilitator refused it or could not be reached). Returns the claimed row, or the
   * existing one when another request holds or has settled it. Call inside a transaction.
   */
  async claim(claim: PaymentClaim): Promise<{ claimed: boolean; payment: PaymentRecord }> {
    const row = await this.q.db
      .selectFrom("payments")
      .select(COLUMNS)
      .where("network", "=", claim.network)
      .where("asset", "=", claim.asset)
      .where("payer", "=", claim.payer)
      .where("nonce", "=", claim.nonce)
      .executeTakeFirst();
    const existing = row && toRecord(row);
    if (existing && existing.status !== "failed") return { claimed: false, payment: existing };
    const payloadSealed = this.sealer.seal(claim.payload, `payment:${existing?.id ?? claim.id}:payload`);
    if (existing) {
      await this.q.db
        .updateTable("payments")
        .set({
          workspace_id: claim.workspace_id,
          credits: claim.credits,
          amount: claim.amount,
          status: "verifying",
          reason: null,
          payload_sealed: payloadSealed,
          runner_id: claim.runner_id,
          updated_at: claim.now,
        })
        .where("id", "=", existing.id)
        .execute();
      return { claimed: true, payment: (await this.get(existing.id))! };
    }
    await this.q.db
      .insertInto("payments")
      .values({
        id: claim.id,
        workspace_id: claim.workspace_id,
        network: claim.network,
        asset: claim.asset,
        payer: claim.payer,
        nonce: claim.nonce,
        credits: claim.credits,
        amount: claim.amount,
        status: "verifying",
        payload_sealed: payloadSealed,
        runner_id: claim.runner_id,
        created_at: claim.now,
        updated_at: claim.now,
      })
      .execute();
    return { claimed: true, payment: (await this.get(claim.id))! };
  }

  /** The signed payload of a payment not yet settled or failed. */
  async payload(id: string): Promise<string | undefined> {
    const row = await this.q.db.selectFrom("payments").select("payload_sealed").where("id", "=", id).executeTakeFirst();
    return row?.payload_sealed ? this.sealer.open(row.payload_sealed, `payment:${id}:payload`) : undefined;
  }

  /** Verified: from here the facilitator may send the transaction. */
  async markSettling(id: string, now: string): Promise<void> {
    await this.q.db.updateTable("payments").set({ status: "settling", updated_at: now }).where("id", "=", id).where("status", "=", "verifying").execute();
  }

  /** Settled on chain; true only for the call that moved it (the caller credits once). */
  async markSettled(id: string, transactionHash: string, now: string): Promise<boolean> {
    const result = await this.q.db
      .updateTable("payments")
      .set({ status: "settled", transaction_hash: transactionHash, payload_sealed: null, runner_id: null, updated_at: now })
      .where("id", "=", id)
      .where("status", "in", ["verifying", "settling"])
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  /** Refused or not settled; the authorization may be tried again by a later request. */
  async markFailed(id: string, reason: string, now: string): Promise<void> {
    await this.q.db
      .updateTable("payments")
      .set({ status: "failed", reason, payload_sealed: null, runner_id: null, updated_at: now })
      .where("id", "=", id)
      .where("status", "in", ["verifying", "settling"])
      .execute();
  }

  /** Handed to this runner (a reconciliation takes over a dead runner's payment). */
  async takeOver(id: string, runnerId: string, now: string): Promise<void> {
    await this.q.db.updateTable("payments").set({ runner_id: runnerId, updated_at: now }).where("id", "=", id).execute();
  }

  /**
   * Payments between verify and settle left by a process that is gone (no live lease), and
   * `ownRunnerId`'s own last updated before `ownBefore` (the caller excludes those it is working on).
   */
  async stranded(now: string, own?: { runnerId: string; before: string }): Promise<PaymentRecord[]> {
    const rows = await this.q.db
      .selectFrom("payments")
      .select(COLUMNS)
      .where("status", "in", ["verifying", "settling"])
      .where(({ or, and, eb, selectFrom }) =>
        or([
          eb("runner_id", "is", null),
          eb("runner_id", "not in", selectFrom("runners").select("id").where("lease_expires_at", ">", now)),
          ...(own ? [and([eb("runner_id", "=", own.runnerId), eb("updated_at", "<", own.before)])] : []),
        ]),
      )
      .execute();
    return rows.map(toRecord);
  }
}
