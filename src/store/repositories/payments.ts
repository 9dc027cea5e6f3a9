import type { Db } from "../database.js";
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

const COLUMNS = "id, workspace_id, network, asset, payer, nonce, credits, amount, status, reason, transaction_hash, runner_id, created_at, updated_at";

function toRecord(row: Record<string, unknown> | undefined): PaymentRecord | undefined {
  if (!row) return undefined;
  return Object.fromEntries(Object.entries(row).map(([field, value]) => [field, value ?? undefined])) as unknown as PaymentRecord;
}

export class PaymentRepository {
  constructor(
    private readonly db: Db,
    private readonly sealer: Sealer,
  ) {}

  get(id: string): PaymentRecord | undefined {
    return toRecord(this.db.prepare(`SELECT ${COLUMNS} FROM payments WHERE id = ?`).get(id) as Record<string, unknown> | undefined);
  }

  /**
   * Claims an authorization for this request: a new one, or one whose earlier attempt failed
   * (the facilitator refused it or could not be reached). Returns the claimed row, or the
   * existing one when another request holds or has settled it. Call inside a transaction.
   */
  claim(claim: PaymentClaim): { claimed: boolean; payment: PaymentRecord } {
    const existing = toRecord(
      this.db.prepare(`SELECT ${COLUMNS} FROM payments WHERE network = ? AND asset = ? AND payer = ? AND nonce = ?`).get(claim.network, claim.asset, claim.payer, claim.nonce) as
        | Record<string, unknown>
        | undefined,
    );
    if (existing && existing.status !== "failed") return { claimed: false, payment: existing };
    const row = { ...claim, payload_sealed: this.sealer.seal(claim.payload, `payment:${existing?.id ?? claim.id}:payload`) };
    if (existing) {
      this.db
        .prepare(
          `UPDATE payments SET workspace_id = @workspace_id, credits = @credits, amount = @amount, status = 'verifying', reason = NULL,
             payload_sealed = @payload_sealed, runner_id = @runner_id, updated_at = @now WHERE id = @existing_id`,
        )
        .run({ ...row, existing_id: existing.id });
      return { claimed: true, payment: this.get(existing.id)! };
    }
    this.db
      .prepare(
        `INSERT INTO payments (id, workspace_id, network, asset, payer, nonce, credits, amount, status, payload_sealed, runner_id, created_at, updated_at)
         VALUES (@id, @workspace_id, @network, @asset, @payer, @nonce, @credits, @amount, 'verifying', @payload_sealed, @runner_id, @now, @now)`,
      )
      .run(row);
    return { claimed: true, payment: this.get(claim.id)! };
  }

  /** The signed payload of a payment not yet settled or failed. */
  payload(id: string): string | undefined {
    const sealed = this.db.prepare("SELECT payload_sealed FROM payments WHERE id = ?").pluck().get(id) as Buffer | null | undefined;
    return sealed ? this.sealer.open(sealed, `payment:${id}:payload`) : undefined;
  }

  /** Verified: from here the facilitator may send the transaction. */
  markSettling(id: string, now: string): void {
    this.db.prepare("UPDATE payments SET status = 'settling', updated_at = ? WHERE id = ? AND status = 'verifying'").run(now, id);
  }

  /** Settled on chain; true only for the call that moved it (the caller credits once). */
  markSettled(id: string, transactionHash: string, now: string): boolean {
    return (
      this.db
        .prepare(
          "UPDATE payments SET status = 'settled', transaction_hash = ?, payload_sealed = NULL, runner_id = NULL, updated_at = ? WHERE id = ? AND status IN ('verifying', 'settling')",
        )
        .run(transactionHash, now, id).changes === 1
    );
  }

  /** Refused or not settled; the authorization may be tried again by a later request. */
  markFailed(id: string, reason: string, now: string): void {
    this.db
      .prepare("UPDATE payments SET status = 'failed', reason = ?, payload_sealed = NULL, runner_id = NULL, updated_at = ? WHERE id = ? AND status IN ('verifying', 'settling')")
      .run(reason, now, id);
  }

  /** Handed to this runner (a reconciliation takes over a dead runner's payment). */
  takeOver(id: string, runnerId: string, now: string): void {
    this.db.prepare("UPDATE payments SET runner_id = ?, updated_at = ? WHERE id = ?").run(runnerId, now, id);
  }

  /**
   * Payments between verify and settle left by a process that is gone (no live lease), and
   * `ownRunnerId`'s own last updated before `ownBefore` (the caller excludes those it is working on).
   */
  stranded(now: string, own?: { runnerId: string; before: string }): PaymentRecord[] {
    return (
      this.db
        .prepare(
          `SELECT ${COLUMNS} FROM payments WHERE status IN ('verifying', 'settling')
             AND (runner_id IS NULL OR runner_id NOT IN (SELECT id FROM runners WHERE lease_expires_at > @now)
                  OR (runner_id = @own_runner AND updated_at < @own_before))`,
        )
        .all({ now, own_runner: own?.runnerId ?? null, own_before: own?.before ?? "" }) as Record<string, unknown>[]
    ).map((row) => toRecord(row)!);
  }
}
