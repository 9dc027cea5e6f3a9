import type { PaymentPayload } from "@x402/core/types";
import type { X402Config } from "../config.js";
import type { EngineCore } from "../engine/core.js";
import { systemClock } from "../engine/clock.js";
import type { PaymentRecord } from "../store/index.js";
import type { Settlement } from "./settlement.js";
import type { PaymentTerms, TopUpOutcome } from "./terms.js";

/**
 * Payments in flight: the ones this process is verifying or settling now, and the ones a process
 * left between verify and settle (stranded), finished by whichever live process sees them first.
 */
export class Reconciliation {
  readonly #inFlight = new Set<string>();
  #reconciling = false;

  constructor(
    private readonly core: EngineCore,
    private readonly config: X402Config,
    private readonly terms: PaymentTerms,
    private readonly settlement: Settlement,
  ) {}

  /**
   * Payments a dead process left between verify and settle (its lease expired): settled now
   * (credited once) or failed. Run at start-up and on every heartbeat, by whichever live
   * process sees them first; returns how many were settled.
   */
  async reconcile(): Promise<number> {
    if (this.config.settings === undefined) return 0;
    let settled = 0;
    // This process's own unfinished payments count once their facilitator call has surely ended
    // (it timed out, and its settlement may have gone through meanwhile).
    const { store, runner, lifecycle } = this.core;
    const ownBefore = new Date(lifecycle.clock.now().getTime() - 2 * this.config.timeoutMs).toISOString();
    const stranded = (await store.payments.stranded(leaseNow(), { runnerId: runner.runnerId, before: ownBefore })).filter((payment) => !this.#inFlight.has(payment.id));
    for (const payment of stranded) {
      try {
        const outcome = await this.resume(payment);
        if (outcome?.kind === "settled") settled += 1;
      } catch (error) {
        this.core.logger.warn({ err: error, payment_id: payment.id }, "payment not reconciled; it is tried again at the next heartbeat");
      }
    }
    return settled;
  }

  /** `reconcile()`, one pass at a time, never throwing: what fails is tried again at the next heartbeat. */
  reconcileInBackground(): void {
    if (this.#reconciling || this.config.settings === undefined) return;
    this.#reconciling = true;
    this.reconcile()
      .catch((error: unknown) => this.core.logger.warn({ err: error }, "payment reconciliation failed; it is tried again at the next heartbeat"))
      .finally(() => (this.#reconciling = false));
  }

  /** Whether a claimed payment is no request's any more: not in flight here, and this process's or its holder's lease expired. */
  async isStranded(payment: PaymentRecord): Promise<boolean> {
    const { store, runner } = this.core;
    return (
      !this.#inFlight.has(payment.id) &&
      (payment.runner_id === runner.runnerId || (await store.payments.stranded(leaseNow())).some((candidate) => candidate.id === payment.id))
    );
  }

  /** Runs `work` on a payment this process just claimed; reconciliation leaves it alone meanwhile. */
  async whileInFlight<T>(paymentId: string, work: () => Promise<T>): Promise<T> {
    this.#inFlight.add(paymentId);
    try {
      return await work();
    } finally {
      this.#inFlight.delete(paymentId);
    }
  }

  /**
   * Finishes a stranded payment with its sealed payload. One that was only verifying is verified
   * again; one already settling may have reached the chain, so the chain is asked first when an
   * RPC endpoint is configured (the transfer found is credited), else it is settled again.
   */
  async resume(payment: PaymentRecord): Promise<TopUpOutcome | undefined> {
    const { store, lifecycle, runner } = this.core;
    const text = await store.payments.payload(payment.id);
    if (text === undefined) return undefined;
    return this.whileInFlight(payment.id, async () => {
      await store.payments.takeOver(payment.id, runner.runnerId, lifecycle.now());
      const payload = JSON.parse(text) as PaymentPayload;
      const requirements = this.terms.requirements(payment.credits);
      if (payment.status === "verifying") return this.settlement.verifyThenSettle(payment, payload, requirements, false);
      const rpcUrl = this.config.rpcUrl;
      if (rpcUrl) {
        const onChain = await this.settlement.fromChain(payment, rpcUrl);
        if (typeof onChain === "object") return onChain;
        if (onChain === "unknown") {
          this.core.logger.error({ payment_id: payment.id }, "the payment's authorization is used on chain but no transfer was found; it needs an operator's check");
          return this.terms.required(payment.credits, "The payment's authorization was used on chain but no transfer to this service was found; it is kept for an operator's check.");
        }
      }
      return this.settlement.settle(payment, payload, requirements, true);
    });
  }
}

/** Leases are wall-clock time between processes (never a test's fake clock), as in the runner. */
function leaseNow(): string {
  return systemClock.now().toISOString();
}
