import { HTTPFacilitatorClient, type FacilitatorClient } from "@x402/core/server";
import { SettleError, VerifyError, type PaymentPayload, type PaymentRequirements, type SettleResponse, type VerifyResponse } from "@x402/core/types";
import type { X402Config } from "../config.js";
import { AppError } from "../domain/errors.js";
import type { EngineCore } from "../engine/core.js";

/**
 * The configured x402 facilitator, asked to verify and settle. A refusal is its answer, even when
 * it comes as an error status; a facilitator that does not answer is a 503 naming it.
 */
export class Facilitator {
  readonly #client: FacilitatorClient | undefined;

  constructor(
    private readonly core: EngineCore,
    private readonly config: X402Config,
    client?: FacilitatorClient,
  ) {
    const settings = config.settings;
    this.#client = client ?? (settings ? new HTTPFacilitatorClient({ url: settings.facilitatorUrl, timeoutMs: config.timeoutMs }) : undefined);
  }

  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    return this.#ask("verify", () => this.#client!.verify(payload, requirements));
  }

  settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    return this.#ask("settle", () => this.#client!.settle(payload, requirements));
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

/** A facilitator's reason and message, for a 402's reason. */
export function describeReason(reason: string | undefined, message: string | undefined): string {
  return [reason, message].filter(Boolean).join(": ") || "no reason given";
}
