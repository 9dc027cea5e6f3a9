import { randomBytes } from "node:crypto";
import { encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../helpers/clock.js";
import { createHarness, type Harness, type TestResponse } from "../helpers/harness.js";
import { eventually, gate } from "../helpers/scripted-executor.js";

// A keyed top-up whose coordinator stalled past its lease (DESIGN §11, issue 40 item 3, for top-ups
// as for actions): two coordinators (engines with stores of their own) on one PostgreSQL database.
// A claims the key and stalls inside the transaction that claims the payment; the key is settled
// as abandoned and the client's retry through B claims it and is in flight; then A wakes up.
// The facilitator is the harness's unreachable one: no payment is credited here, what is tested is
// whose the key's record is (a full x402 run against the devnet adds nothing to that, and the
// payment's own claim by payer and nonce already keeps one authorization from being credited twice).
// PostgreSQL only: on SQLite's single writer a process stalled inside a transaction stops every other.
const harnesses: Harness[] = [];
/** Stalls a failed case left: let go before the harnesses stop, so none waits on them. */
const stalls: ReturnType<typeof gate>[] = [];
afterEach(async () => {
  for (const stall of stalls.splice(0)) stall.open();
  for (const harness of harnesses.splice(0).reverse()) await harness.destroy();
});

/** A payment for `credits` in the shape the service checks before any facilitator hears of it (its signature is never verified here). */
function payment(h: Harness, credits: number): string {
  const requirements = h.engine.topUps.requirements(credits);
  const payload = {
    x402Version: 2,
    accepted: requirements,
    payload: {
      signature: `0x${randomBytes(65).toString("hex")}`,
      authorization: {
        from: `0x${randomBytes(20).toString("hex")}`,
        to: requirements.payTo,
        value: requirements.amount,
        validAfter: "0",
        validBefore: String(Math.floor(Date.now() / 1000) + 3600),
        nonce: `0x${randomBytes(32).toString("hex")}`,
      },
    },
  } as unknown as PaymentPayload;
  return encodePaymentSignatureHeader(payload);
}

/**
 * Makes the next `payments.claim` of `h` wait for `release`; `reached` opens when one is waiting,
 * and `claimed` names the payments its claims wrote.
 */
function stallNextPaymentClaim(h: Harness): { reached: ReturnType<typeof gate>; release: ReturnType<typeof gate>; claimed: string[] } {
  const reached = gate();
  const release = gate();
  const claimed: string[] = [];
  stalls.push(release);
  const claim = h.store.payments.claim.bind(h.store.payments);
  let stallNext = true;
  h.store.payments.claim = async (...args) => {
    if (stallNext) {
      stallNext = false;
      reached.open();
      await release.promise;
    }
    const result = await claim(...args);
    if (result.claimed) claimed.push(result.payment.id);
    return result;
  };
  return { reached, release, claimed };
}

describe("an Idempotency-Key of a top-up whose claimant stalled past its lease", () => {
  it("stays the retry's: the woken claimant attaches no payment to it, deletes nothing and claims no payment", { timeout: 90_000 }, async () => {
    const started = new FakeClock(new Date().toISOString());
    const a = await createHarness({ clock: started });
    harnesses.push(a);
    const b = await createHarness({ location: a.location, masterKey: a.masterKey, adminKey: a.adminKey, clock: new FakeClock(new Date().toISOString()), engine: { runner: { heartbeatMs: 100 } } });
    harnesses.push(b);
    const request = { body: { credits: 5 }, headers: { "idempotency-key": "k-top-up", "payment-signature": payment(a, 5) } };

    // A stalls inside the transaction that claims its payment: its claim on the key is in the store, in flight.
    const stalledA = stallNextPaymentClaim(a);
    const first = a.request("POST", "/v1/credits/top-ups", request);
    await stalledA.reached.promise;
    const claimOfA = (await a.store.idempotency.get(a.workspaceId, "k-top-up", new Date(0).toISOString()))!.claim;
    // … past its lease: A's runner is gone as far as the fleet can tell.
    await a.store.runners.expire(a.engine.core.runner.runnerId, started.now().toISOString());

    // The client retries through B: 409 while the key is A's; once B has settled A's claim, B claims
    // the key and is in flight (held at its own payment's claim).
    const stalledB = stallNextPaymentClaim(b);
    const { response: retried } = await eventually(
      async () => {
        const response = b.request("POST", "/v1/credits/top-ups", request);
        const answered = await Promise.race([response, stalledB.reached.promise.then(() => undefined)]);
        if (answered === undefined) return { response };
        if (answered.status !== 409) throw new Error(`the retry answered ${answered.status}: ${answered.raw}`);
        return undefined;
      },
      { what: "the retry through B to claim the key" },
    );
    const claimOfB = (await b.store.idempotency.get(b.workspaceId, "k-top-up", new Date(0).toISOString()))!.claim;
    expect(claimOfB).not.toBe(claimOfA);

    // A wakes up and finishes its top-up: a 409, and the key is still B's, in flight, naming no payment of A's.
    stalledA.release.open();
    const late: TestResponse = await first;
    expect(await a.store.idempotency.get(a.workspaceId, "k-top-up", new Date(0).toISOString())).toMatchObject({ claim: claimOfB, state: "in_flight", payment_id: undefined });
    expect(late.status, late.raw).toBe(409);
    // The payment A claimed on its way was rolled back with its lost claim: the retry answers for it.
    expect(stalledA.claimed).toHaveLength(1);
    expect(await a.store.payments.get(stalledA.claimed[0]!)).toBeUndefined();

    // B goes on with the one claim of the payment (its facilitator is unreachable: nothing is credited).
    stalledB.release.open();
    expect((await retried).status).not.toBe(409);
    expect(stalledB.claimed).toHaveLength(1);
  });
});
