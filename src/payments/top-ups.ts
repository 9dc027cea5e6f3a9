import { HTTPFacilitatorClient, type FacilitatorClient } from "@x402/core/server";
import { SettleError, VerifyError, type PaymentPayload, type PaymentRequired, type PaymentRequirements, type SettleResponse, type VerifyResponse } from "@x402/core/types";
import type { X402Config, X402Settings } from "../config.js";
import { AppError } from "../domain/errors.js";
import type { Principal } from "../domain/keys.js";
import { requirePermission } from "../engine/access.js";
import type { EngineCore } from "../engine/core.js";
import { claimKey, keyInFlight, requestHash } from "../engine/idempotency.js";
import { systemClock } from "../engine/clock.js";
import { newId } from "../engine/ids.js";
import { retryWhileBusy, sha256 } from "../store/index.js";
import { checkPayment, type CheckedPayment } from "./payload.js";
import type { PaymentRecord } from "../store/index.js";

/** How long the payer's signed authorization must stay valid for the facilitator to settle it. */
const MAX_TIMEOUT_SECONDS = 300;

/** A top-up's outcome: the requirements to pay (402), or the credits added (200). */
export type TopUpOutcome =
  | { kind: "payment_required"; paymentRequired: PaymentRequired; reason: string | undefined }
  | { kind: "settled"; balance: number; credited: number; transaction: string; settlement: SettleResponse; replayed: boolean };

/**
 * x402 top-ups (DESIGN §7): requirements for exactly the credits asked, then verify and settle
 * through the configured facilitator, crediting only after settlement, in the transaction that
 * marks the payment settled. Each authorization (payer, nonce) is claimed in the store before the
 * facilitator hears of it, so a replayed or parallel copy is credited at most once, across processes.
 */
export class TopUps {
  readonly #facilitator: FacilitatorClient | undefined;
  readonly #inFlight = new Set<string>();
  #reconciling = false;

  constructor(
    private readonly core: EngineCore,
    private readonly config: X402Config,
    options: { facilitator?: FacilitatorClient } = {},
  ) {
    const settings = config.settings;
    this.#facilitator = options.facilitator ?? (settings ? new HTTPFacilitatorClient({ url: settings.facilitatorUrl, timeoutMs: config.timeoutMs }) : undefined);
  }

  get configured(): boolean {
    return this.config.settings !== undefined;
  }

  get maxCredits(): number {
    return this.config.maxCredits;
  }

  /** What a payment for `credits` must answer: built the same way every time (matching is exact). */
  requirements(credits: number): PaymentRequirements {
    const settings = this.#settings();
    return {
      scheme: "exact",
      network: settings.network,
      amount: (settings.pricePerCredit * BigInt(credits)).toString(),
      asset: settings.asset,
      payTo: settings.payTo,
      maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
      extra: { name: settings.assetName, version: settings.assetVersion },
    };
  }

  paymentRequired(credits: number, reason?: string): PaymentRequired {
    return {
      x402Version: 2,
      ...(reason ? { error: reason } : {}),
      resource: { url: `${this.core.publicUrl}/v1/credits/top-ups`, description: `${credits} action-service credit${credits === 1 ? "" : "s"}`, mimeType: "application/json" },
      accepts: [this.requirements(credits)],
    };
  }

  /**
   * Tops up the caller's workspace by `credits`, paid by `signature` (the PAYMENT-SIGNATURE
   * value). Without one, or with one that credits nothing, the outcome is the requirements and
   * the reason. With `idempotencyKey`, a retry of a settled top-up returns it again.
   */
  async topUp(principal: Principal, credits: number, signature: string | undefined, idempotencyKey?: string): Promise<TopUpOutcome> {
    requirePermission(principal, "pay");
    this.#settings();
    if (!Number.isInteger(credits) || credits < 1 || credits > this.config.maxCredits) {
      throw new AppError("invalid_request", `credits must be an integer from 1 to ${this.config.maxCredits}.`, { credits, max: this.config.maxCredits });
    }
    if (signature === undefined) return this.#required(credits);
    const parsed = checkPayment(signature, this.requirements(credits), credits);
    if (typeof parsed === "string") return this.#required(credits, parsed);

    if (idempotencyKey === undefined) return this.#pay(principal, credits, parsed);
    const replay = await this.#beginKey(principal, idempotencyKey, { credits, payment: sha256(signature) });
    if (replay) return replay;
    let outcome: TopUpOutcome | undefined;
    try {
      outcome = await this.#pay(principal, credits, parsed, idempotencyKey);
      return outcome;
    } finally {
      const { store } = this.core;
      const workspaceId = principal.workspaceId;
      // Only a settled top-up is kept under the key; anything else created nothing and frees it.
      await retryWhileBusy(() => (outcome?.kind === "settled" ? store.idempotency.complete(workspaceId, idempotencyKey) : store.idempotency.forget(workspaceId, idempotencyKey)));
    }
  }

  /**
   * Payments a dead process left between verify and settle (its lease expired): settled now
   * (credited once) or failed. Run at start-up and on every heartbeat, by whichever live
   * process sees them first; returns how many were settled.
   */
  async reconcile(): Promise<number> {
    if (!this.configured) return 0;
    let settled = 0;
    // This process's own unfinished payments count once their facilitator call has surely ended
    // (it timed out, and its settlement may have gone through meanwhile).
    const { store, runner, lifecycle } = this.core;
    const ownBefore = new Date(lifecycle.clock.now().getTime() - 2 * this.config.timeoutMs).toISOString();
    const stranded = (await store.payments.stranded(leaseNow(), { runnerId: runner.runnerId, before: ownBefore })).filter((payment) => !this.#inFlight.has(payment.id));
    for (const payment of stranded) {
      try {
        const outcome = await this.#resume(payment);
        if (outcome?.kind === "settled") settled += 1;
      } catch (error) {
        this.core.logger.warn({ err: error, payment_id: payment.id }, "payment not reconciled; it is tried again at the next heartbeat");
      }
    }
    return settled;
  }

  /** `reconcile()`, one pass at a time, never throwing: what fails is tried again at the next heartbeat. */
  reconcileInBackground(): void {
    if (this.#reconciling || !this.configured) return;
    this.#reconciling = true;
    this.reconcile()
      .catch((error: unknown) => this.core.logger.warn({ err: error }, "payment reconciliation failed; it is tried again at the next heartbeat"))
      .finally(() => (this.#reconciling = false));
  }

  #settings(): X402Settings {
    const settings = this.config.settings;
    if (!settings) {
      throw new AppError(
        "service_unavailable",
        `x402 top-ups are not configured on this service: set ${this.config.missing.join(", ")} (docs/payments.md; \`action-service x402-devnet\` prints a local configuration).`,
        { missing: this.config.missing },
      );
    }
    return settings;
  }

  #required(credits: number, reason?: string): TopUpOutcome {
    return { kind: "payment_required", paymentRequired: this.paymentRequired(credits, reason), reason };
  }

  /** Replays a settled top-up under the key, or claims the key; undefined when this request goes on. */
  #beginKey(principal: Principal, key: string, request: unknown): Promise<TopUpOutcome | undefined> {
    const { store } = this.core;
    return claimKey(this.core, principal.workspaceId, key, requestHash({ top_up: request }), async (record) => {
      const payment = record.payment_id === undefined ? undefined : await store.payments.get(record.payment_id);
      if (payment?.status === "settled") return this.#settled(payment, true);
      // A process that died left the key to a payment that ended without credit: the key is free again.
      if (payment?.status !== "failed") throw keyInFlight(key);
      return undefined;
    });
  }

  async #pay(
    principal: Principal,
    credits: number,
    parsed: CheckedPayment,
    idempotencyKey?: string,
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
      // The key answers for this payment from now on, even if this process dies before it settles.
      if (claimed.claimed && idempotencyKey !== undefined) await store.idempotency.attachPayment(principal.workspaceId, idempotencyKey, claimed.payment.id);
      return claimed;
    });
    const payment = claim.payment;
    if (!claim.claimed) {
      if (payment.status === "settled") {
        return this.#required(credits, `This payment was already credited (transaction ${payment.transaction_hash}); sign a new one to top up again.`);
      }
      // Verifying or settling: another request's, unless the process that held it is gone.
      const stranded =
        !this.#inFlight.has(payment.id) &&
        (payment.runner_id === runner.runnerId || (await store.payments.stranded(leaseNow())).some((candidate) => candidate.id === payment.id));
      if (!stranded) throw new AppError("conflict", "This payment is being verified and settled by another request; send it again in a few seconds to see the outcome.", { payment_id: payment.id });
      const resumed = await this.#resume(payment);
      if (resumed?.kind === "settled" && payment.workspace_id === principal.workspaceId) return resumed;
      return this.#required(credits, resumed?.kind === "settled" ? "This payment was already credited; sign a new one to top up again." : resumed?.reason);
    }
    this.#inFlight.add(payment.id);
    try {
      return await this.#verifyThenSettle(payment, payload, requirements, true);
    } finally {
      this.#inFlight.delete(payment.id);
    }
  }

  /**
   * Verifies, then settles. A refusal (or another payer than the authorization's signer) fails
   * the payment and is the 402's reason. A facilitator that does not answer fails it too when
   * `failUnanswered` (nothing was sent: the client may send the authorization again); otherwise
   * the payment stays `verifying` for the next reconciliation.
   */
  async #verifyThenSettle(payment: PaymentRecord, payload: PaymentPayload, requirements: PaymentRequirements, failUnanswered: boolean): Promise<TopUpOutcome> {
    const { store, lifecycle } = this.core;
    const verified = await this.#ask("verify", () => this.#facilitator!.verify(payload, requirements)).catch(async (error: unknown) => {
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
      return this.#required(payment.credits, refusal);
    }
    await retryWhileBusy(() => store.payments.markSettling(payment.id, lifecycle.now()));
    return this.#settle(payment, payload, requirements, false);
  }

  /**
   * Finishes a stranded payment with its sealed payload. One that was only verifying is verified
   * again; one already settling may have reached the chain, so the chain is asked first when an
   * RPC endpoint is configured (the transfer found is credited), else it is settled again.
   */
  async #resume(payment: PaymentRecord): Promise<TopUpOutcome | undefined> {
    const { store, lifecycle, runner } = this.core;
    const text = await store.payments.payload(payment.id);
    if (text === undefined) return undefined;
    this.#inFlight.add(payment.id);
    try {
      await store.payments.takeOver(payment.id, runner.runnerId, lifecycle.now());
      const payload = JSON.parse(text) as PaymentPayload;
      const requirements = this.requirements(payment.credits);
      if (payment.status === "verifying") return await this.#verifyThenSettle(payment, payload, requirements, false);
      const rpcUrl = this.config.rpcUrl;
      if (rpcUrl) {
        const onChain = await this.#fromChain(payment, rpcUrl);
        if (typeof onChain === "object") return onChain;
        if (onChain === "unknown") {
          this.core.logger.error({ payment_id: payment.id }, "the payment's authorization is used on chain but no transfer was found; it needs an operator's check");
          return this.#required(payment.credits, "The payment's authorization was used on chain but no transfer to this service was found; it is kept for an operator's check.");
        }
      }
      return await this.#settle(payment, payload, requirements, true);
    } finally {
      this.#inFlight.delete(payment.id);
    }
  }

  /**
   * Settles and, only once the facilitator confirms the transaction, credits the workspace in
   * the transaction that marks the payment settled. When the facilitator cannot be reached the
   * payment stays `settling` (kept for reconciliation) and nothing is credited.
   */
  async #settle(payment: PaymentRecord, payload: PaymentPayload, requirements: PaymentRequirements, resumed: boolean): Promise<TopUpOutcome> {
    const { logger } = this.core;
    const settlement = await this.#ask("settle", () => this.#facilitator!.settle(payload, requirements));
    if (!settlement.success) {
      const reason = `The payment was not settled: ${describeReason(settlement.errorReason, settlement.errorMessage)}.`;
      const rpcUrl = this.config.rpcUrl;
      if (resumed && rpcUrl) {
        // Refused now, perhaps because an earlier attempt went through after all: the chain says.
        const onChain = await this.#fromChain(payment, rpcUrl);
        if (typeof onChain === "object") return onChain;
        if (onChain === "unused") {
          await this.#fail(payment.id, reason);
          return this.#required(payment.credits, reason);
        }
      }
      if (resumed) {
        // An earlier attempt may have reached the chain before its process died: do not call it failed.
        logger.error({ payment_id: payment.id, reason }, "a resumed settlement was refused; the payment needs an operator's check against the chain");
        return this.#required(payment.credits, `${reason} An earlier attempt may have settled it; it is kept for an operator's check.`);
      }
      await this.#fail(payment.id, reason);
      return this.#required(payment.credits, reason);
    }
    return this.#credit(payment, settlement);
  }

  /** What the chain says of a payment whose settlement answer was lost: the transfer found is credited. */
  async #fromChain(payment: PaymentRecord, rpcUrl: string): Promise<TopUpOutcome | "unused" | "unknown"> {
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
    return this.#settled((await store.payments.get(payment.id))!, false, settlement);
  }

  async #settled(payment: PaymentRecord, replayed: boolean, settlement?: SettleResponse): Promise<TopUpOutcome> {
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

  /** One facilitator call; an error that is not the facilitator's answer becomes a 503 naming it. */
  async #ask<T extends VerifyResponse | SettleResponse>(step: "verify" | "settle", call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      // An error status with a verify or settle body is still the facilitator's answer.
      if (error instanceof VerifyError) return { isValid: false, invalidReason: error.invalidReason, invalidMessage: error.invalidMessage } as T;
      if (error instanceof SettleError) return { success: false, errorReason: error.errorReason, errorMessage: error.errorMessage, transaction: "", network: this.config.settings!.network } as T;
      const url = this.config.settings!.facilitatorUrl;
      const cause = error instanceof Error ? error.message : String(error);
      this.core.logger.warn({ step, facilitator: url, cause }, "facilitator did not answer");
      const said = `The payment facilitator at ${url} did not answer the ${step} (${cause}).`;
      throw new AppError(
        "service_unavailable",
        step === "verify"
          ? `${said} Nothing was charged or credited; send the same request again later.`
          : `${said} Nothing is credited until the settlement is confirmed; the payment is kept and checked again: send the same request again later to see the outcome.`,
        { retry_after: 5 },
      );
    }
  }
}

/** Leases are wall-clock time between processes (never a test's fake clock), as in the runner. */
function leaseNow(): string {
  return systemClock.now().toISOString();
}

function describeReason(reason: string | undefined, message: string | undefined): string {
  return [reason, message].filter(Boolean).join(": ") || "no reason given";
}
