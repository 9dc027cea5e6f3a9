import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { X402Config } from "../config.js";
import type { EngineCore } from "../engine/core.js";
import { retryWhileBusy, type PaymentRecord } from "../store/index.js";
import { describeReason, type Facilitator } from "./facilitator.js";
import type { PaymentTerms, TopUpOutcome } from "./terms.js";

/**
 * A claimed payment carried to its end: verified, settled, and credited to its workspace only
 * once settled, in the transaction that marks it so; or failed, with the reason for the 402.
 */
export class Settlement {
  constructor(
    private readonly core: EngineCore,
    private readonly config: X402Config,
    private readonly terms: PaymentTerms,
    private readonly facilitator: Facilitator,
  ) {}

  /**
   * Verifies, then settles. A refusal (or another payer than the authorization's signer) fails
   * the payment and is the 402's reason. A facilitator that does not answer fails it too when
   * `failUnanswered` (nothing was sent: the client may send the authorization again); otherwise
   * the payment stays `verifying` for the next reconciliation.
   */
  async verifyThenSettle(payment: PaymentRecord, payload: PaymentPayload, requirements: PaymentRequirements, failUnanswered: boolean): Promise<TopUpOutcome> {
    const { store, lifecycle } = this.core;
    const verified = await this.facilitator.verify(payload, requirements).catch(async (error: unknown) => {
      if (failUnanswered) await this.#fail(payment.id, (error as Error).message);
      throw error;
    });
    const refusal = !verified.isValid
      ? `The facilitator refused the payment: ${describeReason(verified.invalidReason, verified.invalidMessage)}.`
      : verified.payer && verified.payer.toLowerCase() !== payment.payer
        ? "The facilitator names another payer than the authorization's signer."
        : undefined;
    if (refusal) {
      await this.#fail(payment.id, refusal);
      return this.terms.required(payment.credits, refusal);
    }
    await retryWhileBusy(() => store.payments.markSettling(payment.id, lifecycle.now()));
    return this.settle(payment, payload, requirements, false);
  }

  /**
   * Settles and, only once the facilitator confirms the transaction, credits the workspace in
   * the transaction that marks the payment settled. When the facilitator cannot be reached the
   * payment stays `settling` (kept for reconciliation) and nothing is credited.
   */
  async settle(payment: PaymentRecord, payload: PaymentPayload, requirements: PaymentRequirements, resumed: boolean): Promise<TopUpOutcome> {
    const { logger } = this.core;
    const settlement = await this.facilitator.settle(payload, requirements);
    if (!settlement.success) {
      const reason = `The payment was not settled: ${describeReason(settlement.errorReason, settlement.errorMessage)}.`;
      const rpcUrl = this.config.rpcUrl;
      if (resumed && rpcUrl) {
        // Refused now, perhaps because an earlier attempt went through after all: the chain says.
        const onChain = await this.fromChain(payment, rpcUrl);
        if (typeof onChain === "object") return onChain;
        if (onChain === "unused") {
          await this.#fail(payment.id, reason);
          return this.terms.required(payment.credits, reason);
        }
      }
      if (resumed) {
        // An earlier attempt may have reached the chain before its process died: do not call it failed.
        logger.error({ payment_id: payment.id, reason }, "a resumed settlement was refused; the payment needs an operator's check against the chain");
        return this.terms.required(payment.credits, `${reason} An earlier attempt may have settled it; it is kept for an operator's check.`);
      }
      await this.#fail(payment.id, reason);
      return this.terms.required(payment.credits, reason);
    }
    return this.#credit(payment, settlement);
  }

  /** What the chain says of a payment whose settlement answer was lost: the transfer found is credited. */
  async fromChain(payment: PaymentRecord, rpcUrl: string): Promise<TopUpOutcome | "unused" | "unknown"> {
    // viem is loaded by the first payment that needs the chain, not by every start.
    const { findSettlement } = await import("./chain.js");
    const onChain = await findSettlement(rpcUrl, payment.asset, payment.payer, payment.nonce);
    if (typeof onChain === "string") return onChain;
    return this.#credit(payment, { success: true, transaction: onChain.transaction, network: payment.network as `${string}:${string}`, payer: payment.payer });
  }

  /** Credits a settled payment, once: in the transaction that marks it settled. */
  async #credit(payment: PaymentRecord, settlement: SettleResponse): Promise<TopUpOutcome> {
    const { store, lifecycle, logger } = this.core;
    const credited = await retryWhileBusy(() =>
      store.transaction(async () => {
        const now = lifecycle.now();
        if (!(await store.payments.markSettled(payment.id, settlement.transaction, now))) return false;
        await store.ledger.append({ workspace_id: payment.workspace_id, kind: "top_up", amount: payment.credits, reference: `x402:${payment.id}`, created_at: now });
        return true;
      }),
    );
    if (credited) logger.info({ payment_id: payment.id, credits: payment.credits, transaction: settlement.transaction }, "top-up credited");
    return this.settled((await store.payments.get(payment.id))!, false, settlement);
  }

  /** The outcome of a settled payment, with the workspace's balance now. */
  async settled(payment: PaymentRecord, replayed: boolean, settlement?: SettleResponse): Promise<TopUpOutcome> {
    const { store } = this.core;
    return {
      kind: "settled",
      balance: await store.ledger.balance(payment.workspace_id),
      credited: payment.credits,
      transaction: payment.transaction_hash!,
      settlement: settlement ?? { success: true, transaction: payment.transaction_hash!, network: payment.network as `${string}:${string}`, payer: payment.payer },
      replayed,
    };
  }

  async #fail(paymentId: string, reason: string): Promise<void> {
    const { store, lifecycle } = this.core;
    await store.payments.markFailed(paymentId, reason, lifecycle.now());
  }
}
