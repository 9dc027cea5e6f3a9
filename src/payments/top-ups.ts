import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import type { X402Config } from "../config.js";
import { AppError } from "../domain/errors.js";
import type { Principal } from "../domain/keys.js";
import { requirePermission } from "../engine/access/index.js";
import type { EngineCore } from "../engine/core.js";
import { claimKey, keyInFlight, newClaim, requestHash } from "../engine/idempotency.js";
import { newId } from "../engine/ids.js";
import { retryWhileBusy, sha256 } from "../store/index.js";
import type { IdempotencyRecord } from "../store/repositories/idempotency.js";
import { Facilitator } from "./facilitator.js";
import { checkPayment, type CheckedPayment } from "./payload.js";
import { Reconciliation } from "./reconciliation.js";
import { Settlement } from "./settlement.js";
import { PaymentTerms, type TopUpOutcome } from "./terms.js";

export type { TopUpOutcome } from "./terms.js";

/** An Idempotency-Key with the token of this request's claim on it (what its writes to the record name). */
interface ClaimedKey {
  key: string;
  claim: string;
}

/** Thrown inside a payment's claim when the key is no longer this request's claim: the payment's claim is rolled back. */
class LostClaim extends Error {}

/**
 * x402 top-ups (DESIGN §7): requirements for exactly the credits asked, then verify and settle
 * through the configured facilitator, crediting only after settlement, in the transaction that
 * marks the payment settled. Each authorization (payer, nonce) is claimed in the store before the
 * facilitator hears of it, so a replayed or parallel copy is credited at most once, across processes.
 */
export class TopUps {
  readonly #terms: PaymentTerms;
  readonly #settlement: Settlement;
  readonly #reconciliation: Reconciliation;

  constructor(
    private readonly core: EngineCore,
    private readonly config: X402Config,
    options: { facilitator?: FacilitatorClient } = {},
  ) {
    this.#terms = new PaymentTerms(core, config);
    this.#settlement = new Settlement(core, config, this.#terms, new Facilitator(core, config, options.facilitator));
    this.#reconciliation = new Reconciliation(core, config, this.#terms, this.#settlement);
  }

  get configured(): boolean {
    return this.config.settings !== undefined;
  }

  get maxCredits(): number {
    return this.config.maxCredits;
  }

  /** What a payment for `credits` must answer: built the same way every time (matching is exact). */
  requirements(credits: number): PaymentRequirements {
    return this.#terms.requirements(credits);
  }

  paymentRequired(credits: number, reason?: string): PaymentRequired {
    return this.#terms.paymentRequired(credits, reason);
  }

  /**
   * Tops up the caller's workspace by `credits`, paid by `signature` (the PAYMENT-SIGNATURE
   * value). Without one, or with one that credits nothing, the outcome is the requirements and
   * the reason. With `idempotencyKey`, a retry of a settled top-up returns it again.
   */
  async topUp(principal: Principal, credits: number, signature: string | undefined, idempotencyKey?: string): Promise<TopUpOutcome> {
    requirePermission(principal, "pay");
    this.#terms.settings();
    if (!Number.isInteger(credits) || credits < 1 || credits > this.config.maxCredits) {
      throw new AppError("invalid_request", `credits must be an integer from 1 to ${this.config.maxCredits}.`, { credits, max: this.config.maxCredits });
    }
    if (signature === undefined) return this.#terms.required(credits);
    const parsed = checkPayment(signature, this.requirements(credits), credits);
    if (typeof parsed === "string") return this.#terms.required(credits, parsed);

    if (idempotencyKey === undefined) return this.#pay(principal, credits, parsed);
    const key = { key: idempotencyKey, claim: newClaim() };
    const replay = await this.#beginKey(principal, key, { credits, payment: sha256(signature) });
    if (replay) return replay;
    let outcome: TopUpOutcome | undefined;
    try {
      outcome = await this.#pay(principal, credits, parsed, key);
      return outcome;
    } catch (error) {
      if (error instanceof LostClaim) return await this.#afterLostClaim(principal, idempotencyKey);
      throw error;
    } finally {
      const { store } = this.core;
      const workspaceId = principal.workspaceId;
      // Only a settled top-up is kept under the key; anything else created nothing and frees it.
      // Either only while the key is still this request's claim (DESIGN §11 fencing).
      await retryWhileBusy(() => (outcome?.kind === "settled" ? store.idempotency.complete(workspaceId, key.key, key) : store.idempotency.forget(workspaceId, key.key, key)), { checksItsEffect: true });
    }
  }

  /**
   * Payments a dead process left between verify and settle (its lease expired): settled now
   * (credited once) or failed. Run at start-up and on every heartbeat, by whichever live
   * process sees them first; returns how many were settled.
   */
  reconcile(): Promise<number> {
    return this.#reconciliation.reconcile();
  }

  /** `reconcile()`, one pass at a time, never throwing: what fails is tried again at the next heartbeat. */
  reconcileInBackground(): void {
    this.#reconciliation.reconcileInBackground();
  }

  /** Replays a settled top-up under the key, or claims the key under `key.claim`; undefined when this request goes on. */
  #beginKey(principal: Principal, key: ClaimedKey, request: unknown): Promise<TopUpOutcome | undefined> {
    return claimKey(this.core, principal.workspaceId, key.key, requestHash({ top_up: request }), (record) => this.#replay(record, key.key), key.claim);
  }

  /** What a key's record answers: its settled top-up again; undefined when it is free again (its payment ended without credit). */
  async #replay(record: IdempotencyRecord, key: string): Promise<TopUpOutcome | undefined> {
    const payment = record.payment_id === undefined ? undefined : await this.core.store.payments.get(record.payment_id);
    if (payment?.status === "settled") return this.#settlement.settled(payment, true);
    // A process that died left the key to a payment that ended without credit: the key is free again.
    if (payment?.status !== "failed") throw keyInFlight(key);
    return undefined;
  }

  /**
   * The answer of a keyed top-up whose claim on its key lapsed before it claimed its payment (its
   * process stalled past its lease): the top-up the key names now, settled by another request with
   * the key; else a 409. It claimed no payment, so it credited nothing.
   */
  async #afterLostClaim(principal: Principal, key: string): Promise<TopUpOutcome> {
    const record = await this.core.store.idempotency.get(principal.workspaceId, key, this.core.lifecycle.now());
    const replayed = record && (await this.#replay(record, key));
    if (replayed) return replayed;
    throw new AppError(
      "conflict",
      "This top-up lost its hold on the Idempotency-Key while it was in progress (the service stalled past its lease), so it charged nothing; send it again with the same key.",
      { idempotency_key: key },
    );
  }

  /** Claims the payment's authorization, then carries it to its end; a copy already claimed is answered from its record. */
  async #pay(
    principal: Principal,
    credits: number,
    parsed: CheckedPayment,
    idempotencyKey?: ClaimedKey,
  ): Promise<TopUpOutcome> {
    const { store, lifecycle, runner } = this.core;
    const { payload, requirements } = parsed;
    const claim = await store.transaction(async () => {
      const claimed = await store.payments.claim({
        id: newId("pay"),
        workspace_id: principal.workspaceId,
        network: requirements.network,
        asset: requirements.asset.toLowerCase(),
        payer: parsed.from,
        nonce: parsed.nonce,
        credits,
        amount: requirements.amount,
        payload: JSON.stringify(payload),
        runner_id: runner.runnerId,
        now: lifecycle.now(),
      });
      // The key answers for this payment from now on, even if this process dies before it settles;
      // a key no longer this request's claim rolls the payment's claim back: another request answers for it.
      if (claimed.claimed && idempotencyKey !== undefined && !(await store.idempotency.attachPayment(principal.workspaceId, idempotencyKey.key, claimed.payment.id, idempotencyKey.claim))) {
        throw new LostClaim();
      }
      return claimed;
    });
    const payment = claim.payment;
    if (!claim.claimed) {
      if (payment.status === "settled") {
        return this.#terms.required(credits, `This payment was already credited (transaction ${payment.transaction_hash}); sign a new one to top up again.`);
      }
      // Verifying or settling: another request's, unless the process that held it is gone.
      if (!(await this.#reconciliation.isStranded(payment))) {
        throw new AppError("conflict", "This payment is being verified and settled by another request; send it again in a few seconds to see the outcome.", { payment_id: payment.id });
      }
      const resumed = await this.#reconciliation.resume(payment);
      if (resumed?.kind === "settled" && payment.workspace_id === principal.workspaceId) return resumed;
      return this.#terms.required(credits, resumed?.kind === "settled" ? "This payment was already credited; sign a new one to top up again." : resumed?.reason);
    }
    return this.#reconciliation.whileInFlight(payment.id, () => this.#settlement.verifyThenSettle(payment, payload, requirements, true));
  }
}
