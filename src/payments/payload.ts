import { decodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { z } from "zod";
import { requestHash } from "../engine/idempotency.js";

/** The EIP-3009 authorization inside an `exact` EVM payment. */
const Authorization = z.object({
  signature: z.string().regex(/^0x[0-9a-fA-F]+$/),
  authorization: z.object({
    from: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
    to: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
    value: z.string().regex(/^[0-9]+$/),
    validAfter: z.string().regex(/^[0-9]+$/),
    validBefore: z.string().regex(/^[0-9]+$/),
    nonce: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
  }),
});

/** A payment that answers this service's requirements: its payload, and whose authorization (payer, nonce; lower-case) it spends. */
export interface CheckedPayment {
  payload: PaymentPayload;
  requirements: PaymentRequirements;
  from: string;
  nonce: string;
}

/**
 * A PAYMENT-SIGNATURE value, checked against the requirements this service issues for
 * `credits`, before any facilitator hears of it; a string says why it cannot pay.
 */
export function checkPayment(signature: string, requirements: PaymentRequirements, credits: number): CheckedPayment | string {
  let payload: PaymentPayload;
  try {
    payload = decodePaymentSignatureHeader(signature);
  } catch {
    return "PAYMENT-SIGNATURE is not a base64-encoded x402 payment payload.";
  }
  if (payload === null || typeof payload !== "object" || payload.x402Version !== 2) return "The payment is not x402 version 2.";
  const accepted = payload.accepted as unknown;
  if (accepted === null || typeof accepted !== "object") return "The payment does not say which requirements it accepts.";
  const differing = Object.keys(requirements).filter((field) => requestHash((accepted as Record<string, unknown>)[field]) !== requestHash(requirements[field as keyof PaymentRequirements]));
  if (differing.length > 0) return `The payment answers other requirements than this service issues for ${credits} credits (${differing.join(", ")} differ): ask again without PAYMENT-SIGNATURE.`;
  const inner = Authorization.safeParse(payload.payload);
  if (!inner.success) return "The payment carries no EIP-3009 authorization (signature, from, to, value, nonce).";
  const { authorization } = inner.data;
  if (authorization.to.toLowerCase() !== requirements.payTo.toLowerCase()) return "The authorization pays another address than this service's.";
  if (authorization.value !== requirements.amount) return `The authorization is for ${authorization.value}, not the ${requirements.amount} that ${credits} credits cost.`;
  return { payload, requirements, from: authorization.from.toLowerCase(), nonce: authorization.nonce.toLowerCase() };
}
