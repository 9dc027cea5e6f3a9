import type { PaymentRequired, PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { X402Config, X402Settings } from "../config.js";
import { AppError } from "../domain/errors.js";
import type { EngineCore } from "../engine/core.js";

/** How long the payer's signed authorization must stay valid for the facilitator to settle it. */
const MAX_TIMEOUT_SECONDS = 300;

/** A top-up's outcome: the requirements to pay (402), or the credits added (200). */
export type TopUpOutcome =
  | { kind: "payment_required"; paymentRequired: PaymentRequired; reason: string | undefined }
  | { kind: "settled"; balance: number; credited: number; transaction: string; settlement: SettleResponse; replayed: boolean };

/** What this service asks a payment for credits to answer (the x402 requirements and the 402 that carries them). */
export class PaymentTerms {
  constructor(
    private readonly core: EngineCore,
    private readonly config: X402Config,
  ) {}

  /** What a payment for `credits` must answer: built the same way every time (matching is exact). */
  requirements(credits: number): PaymentRequirements {
    const settings = this.settings();
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

  /** The 402 outcome for `credits`, with why the payment sent (if any) credited nothing. */
  required(credits: number, reason?: string): TopUpOutcome {
    return { kind: "payment_required", paymentRequired: this.paymentRequired(credits, reason), reason };
  }

  /** The x402 settings; `service_unavailable` naming the variables still missing when top-ups are not configured. */
  settings(): X402Settings {
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
}
