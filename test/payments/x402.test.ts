import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, decodePaymentSignatureHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { createPublicClient, createWalletClient, defineChain, http, parseAbi, type Address, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startDevnet, type Devnet } from "../../src/payments/devnet/index.js";
import { startServe, type ServeProcess } from "../helpers/processes.js";
import { startProxy, type FacilitatorProxy } from "./facilitator-proxy.js";
import { eventually } from "../helpers/wait.js";

// Top-ups end to end (DESIGN §7) against `x402-devnet` in this process: a real ganache chain, the
// real EIP-3009 test USDC and the real facilitator. Payments are signed by viem accounts and sent
// by `@x402/fetch`. The service is a real `serve` process (kill -9 for the crash case); between
// it and the facilitator sits a pass-through proxy the tests can make slow, unreachable, lose a
// settlement's answer, or have it move a payer's funds away before forwarding a settlement, so
// that the facilitator's own settlement really fails on chain.
//
// The cases share one chain and one workspace: each reads balances relative to its own start, and
// none ends before everything it sent the facilitator has landed and no payment is in flight, so
// nothing a case started can be credited during the next. No facilitator call is timed out unless
// a case provokes it: the service waits the product's default (30 s, far longer than a settlement
// on a loaded machine); the one timeout case runs a second process with a short timeout.

const TOKEN = parseAbi(["function balanceOf(address) view returns (uint256)", "function transfer(address to, uint256 value) returns (bool)"]);
/** The facilitator timeout of the process that is made to time out (the proxy holds its call until it hangs up). */
const IMPATIENT_TIMEOUT_SECONDS = 1;

let devnet: Devnet;
let proxy: FacilitatorProxy;
let dataDir: string;
let service: ServeProcess;
let key: string;
const chain = () => defineChain({ id: devnet.chainId, name: "devnet", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [devnet.rpcUrl] } } });

beforeAll(async () => {
  devnet = await startDevnet();
  proxy = await startProxy(devnet.facilitatorUrl);
  dataDir = mkdtempSync(join(tmpdir(), "action-service-x402-"));
  service = await serve();
  key = service.firstKey!;
});

afterEach(async () => {
  proxy.mode = "pass";
  // Whatever the case sent the facilitator has landed on chain before the next case reads a balance.
  await proxy.quiet();
  proxy.seen.length = 0;
  proxy.beforeSettle = undefined;
  // No payment is left for the service to settle or credit later, during another case.
  await expectNothingInFlight();
  // After every case the ledger sums to the balance.
  await expectLedgerMatchesBalance();
});

afterAll(async () => {
  if (service && service.child.exitCode === null) await service.stop();
  await proxy?.close();
  await devnet?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** A `serve` on the shared data dir, its facilitator behind the proxy; `env` adds or overrides variables. */
function serve(env: Record<string, string> = {}): Promise<ServeProcess> {
  return startServe({
    dataDir,
    sandboxUrl: "http://127.0.0.1:9",
    env: { ...devnet.env, ACTION_SERVICE_X402_FACILITATOR_URL: proxy.url, ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "100000", ...env },
  });
}

describe("x402 top-ups against the devnet", () => {
  it("without PAYMENT-SIGNATURE: 402 with x402 v2 requirements for exactly the credits asked, and nothing changes", async () => {
    const before = await balance();
    const response = await topUp(37);
    expect(response.status).toBe(402);
    const required = decodePaymentRequiredHeader(response.headers.get("payment-required")!);
    expect(required.x402Version).toBe(2);
    expect(required.resource.url).toBe(`${service.url}/v1/credits/top-ups`);
    expect(required.accepts).toEqual([
      {
        scheme: "exact",
        network: devnet.network,
        amount: (37n * 10_000n).toString(),
        asset: devnet.asset,
        payTo: devnet.payTo,
        maxTimeoutSeconds: 300,
        extra: { name: "USDC", version: "2" },
      },
    ]);
    const body = (await response.json()) as { error: { code: string; details: { payment_required: PaymentRequired } } };
    expect(body.error.code).toBe("payment_required");
    expect(body.error.details.payment_required).toEqual(required);
    expect(await balance()).toBe(before);
    expect(proxy.seen).toEqual([]);
  });

  it("a real payment: 200, the balance up by exactly the credits, the pay-to address up by exactly the amount on chain", async () => {
    const payer = await fundedAccount(1_000_000n);
    const [before, payToBefore, payerBefore] = [await balance(), await tokenBalance(devnet.payTo), await tokenBalance(payer.address)];
    const response = await payingFetch(payer)(`${service.url}/v1/credits/top-ups`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ credits: 25 }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { balance: number; credited: number; transaction: Hex };
    expect(body).toEqual({ balance: before + 25, credited: 25, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    const settlement = decodePaymentResponseHeader(response.headers.get("payment-response")!);
    expect(settlement).toMatchObject({ success: true, transaction: body.transaction, network: devnet.network });
    expect(await balance()).toBe(before + 25);
    expect(await tokenBalance(devnet.payTo)).toBe(payToBefore + 250_000n);
    expect(await tokenBalance(payer.address)).toBe(payerBefore - 250_000n);
    const receipt = await reader().getTransactionReceipt({ hash: body.transaction });
    expect(receipt.status).toBe("success");
    expect(proxy.seen).toEqual(["/verify", "/settle"]);
  });

  it("the facilitator refuses verification (a payer without the funds): 402 with its reason, no credit", async () => {
    const broke = privateKeyToAccount(generatePrivateKey());
    const before = await balance();
    const signature = await signPayment(broke, 10);
    const response = await topUp(10, signature);
    expect(response.status).toBe(402);
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("payment_required");
    expect(error.message).toMatch(/The facilitator refused the payment: .*insufficient/i);
    expect(decodePaymentRequiredHeader(response.headers.get("payment-required")!).error).toBe(error.message);
    expect(await balance()).toBe(before);
    expect(proxy.seen).toEqual(["/verify"]);
  });

  it("a forged signature: 402 with the reason, no credit, nothing on chain", async () => {
    const payer = await fundedAccount(1_000_000n);
    const before = [await balance(), await tokenBalance(devnet.payTo)] as const;
    const payload = await createPayload(payer, 10);
    // Signed by another key over the same authorization: it names the payer but is not theirs.
    const forger = privateKeyToAccount(generatePrivateKey());
    const forged = await createPayload(forger, 10);
    const tampered: PaymentPayload = { ...payload, payload: { ...payload.payload, signature: (forged.payload as { signature: Hex }).signature } };
    const response = await topUp(10, encodePaymentSignatureHeader(tampered));
    expect(response.status).toBe(402);
    const { error } = (await response.json()) as { error: { message: string } };
    expect(error.message).toMatch(/refused the payment: .*signature/i);
    expect([await balance(), await tokenBalance(devnet.payTo)]).toEqual(before);
    // The payer's own, untampered authorization still pays: the forgery did not burn it.
    expect((await topUp(10, encodePaymentSignatureHeader(payload))).status).toBe(200);
    expect(await balance()).toBe(before[0] + 10);
  });

  it("settlement fails on chain (the payer's funds moved after verification): 402 with the reason, no credit", async () => {
    const payer = await fundedAccount(100_000n, { gas: true });
    const before = [await balance(), await tokenBalance(devnet.payTo)];
    const signature = await signPayment(payer, 10);
    proxy.mode = "drain-before-settle";
    proxy.beforeSettle = () => drain(payer);
    const response = await topUp(10, signature);
    expect(response.status).toBe(402);
    const { error } = (await response.json()) as { error: { message: string } };
    expect(error.message).toMatch(/The payment was not settled: /);
    expect([await balance(), await tokenBalance(devnet.payTo)]).toEqual(before);
    expect(proxy.seen).toEqual(["/verify", "/settle"]);
  });

  it("facilitator down: 503 naming it, with Retry-After, no credit; the same payment goes through once it is back", async () => {
    const payer = await fundedAccount(1_000_000n);
    const before = await balance();
    const signature = await signPayment(payer, 5);
    proxy.mode = "down";
    const response = await topUp(5, signature);
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("5");
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("service_unavailable");
    expect(error.message).toContain(`The payment facilitator at ${proxy.url} did not answer the verify`);
    expect(error.message).toContain("Nothing was charged or credited");
    expect(await balance()).toBe(before);

    proxy.mode = "pass";
    expect((await topUp(5, signature)).status).toBe(200);
    expect(await balance()).toBe(before + 5);
  });

  it("facilitator slow to verify: 503 after the configured timeout, no credit", async () => {
    const payer = await fundedAccount(1_000_000n);
    const [before, payToBefore] = [await balance(), await tokenBalance(devnet.payTo)];
    const signature = await signPayment(payer, 5);
    // Its only facilitator call is the one held: a short timeout here cannot fire on anything else.
    const impatient = await serve({ ACTION_SERVICE_X402_TIMEOUT_SECONDS: String(IMPATIENT_TIMEOUT_SECONDS) });
    try {
      proxy.mode = "slow";
      const started = Date.now();
      const response = await topUp(5, signature, {}, impatient.url);
      expect(response.status).toBe(503);
      // The proxy never answers: the 503 is the service's own timeout, its configured 1 s and not the default 30 s (a bound loose enough for a loaded machine).
      expect(Date.now() - started).toBeLessThan(20_000);
      const { error } = (await response.json()) as { error: { message: string } };
      expect(error.message).toMatch(/did not answer the verify \(.*time/i);
    } finally {
      await impatient.stop();
    }
    expect([await balance(), await tokenBalance(devnet.payTo)]).toEqual([before, payToBefore]);
  });

  it("settled on chain but the answer is lost (the connection drops after the facilitator settled): no credit then, credited once, later", async () => {
    const payer = await fundedAccount(1_000_000n);
    const [before, payToBefore] = [await balance(), await tokenBalance(devnet.payTo)];
    const signature = await signPayment(payer, 8);
    proxy.mode = "settle-then-drop";
    const response = await topUp(8, signature);
    expect(response.status).toBe(503);
    const { error } = (await response.json()) as { error: { message: string } };
    expect(error.message).toContain("did not answer the settle");
    expect(error.message).toContain("Nothing is credited until the settlement is confirmed");
    expect(await balance()).toBe(before);
    // The transfer went through on chain (the proxy dropped the answer once the facilitator had given it).
    expect(await tokenBalance(devnet.payTo)).toBe(payToBefore + 80_000n);

    // Sent again, the payment is found on chain and credited, once.
    proxy.mode = "pass";
    const again = await topUp(8, signature);
    expect(again.status).toBe(200);
    expect(((await again.json()) as { balance: number }).balance).toBe(before + 8);
    const third = await topUp(8, signature);
    expect(third.status).toBe(402);
    expect(((await third.json()) as { error: { message: string } }).error.message).toMatch(/already credited/);
    expect(await balance()).toBe(before + 8);
    expect(await tokenBalance(devnet.payTo)).toBe(payToBefore + 80_000n);
  });

  it("the same payment twice, a reused nonce, and copies in parallel to two processes: credited once", async () => {
    const payer = await fundedAccount(1_000_000n);
    const [before, payToBefore] = [await balance(), await tokenBalance(devnet.payTo)];
    const signature = await signPayment(payer, 12);
    expect((await topUp(12, signature)).status).toBe(200);
    const replay = await topUp(12, signature);
    expect(replay.status).toBe(402);
    expect(((await replay.json()) as { error: { message: string } }).error.message).toMatch(/already credited \(transaction 0x[0-9a-f]{64}\)/);

    // The same nonce signed again for another amount: the authorization is spent, nothing more.
    const first = decodePaymentSignatureHeader(signature).payload as { authorization: Record<string, string> };
    const reused = await createPayload(payer, 5);
    const authorization: Record<string, string> = { ...(reused.payload as { authorization: Record<string, string> }).authorization, nonce: first.authorization.nonce! };
    const resigned = await payer.signTypedData({
      domain: { name: "USDC", version: "2", chainId: devnet.chainId, verifyingContract: devnet.asset },
      types: { TransferWithAuthorization: ["from:address", "to:address", "value:uint256", "validAfter:uint256", "validBefore:uint256", "nonce:bytes32"].map((field) => ({ name: field.split(":")[0]!, type: field.split(":")[1]! })) },
      primaryType: "TransferWithAuthorization",
      message: { ...authorization, value: BigInt(authorization.value!), validAfter: BigInt(authorization.validAfter!), validBefore: BigInt(authorization.validBefore!) } as never,
    });
    const reusedNonce = await topUp(5, encodePaymentSignatureHeader({ ...reused, payload: { authorization, signature: resigned } }));
    expect(reusedNonce.status).toBe(402);
    expect(((await reusedNonce.json()) as { error: { message: string } }).error.message).toMatch(/already credited/);

    // Six copies at once, to two processes sharing the data dir.
    const other = await serve();
    try {
      const parallel = await signPayment(payer, 7);
      const answers = await Promise.all(Array.from({ length: 6 }, (_, index) => topUp(7, parallel, {}, index % 2 === 0 ? service.url : other.url)));
      const statuses = answers.map((answer) => answer.status);
      expect(statuses.filter((status) => status === 200)).toHaveLength(1);
      expect(statuses.every((status) => [200, 402, 409].includes(status))).toBe(true);
    } finally {
      await other.stop();
    }

    expect(await balance()).toBe(before + 12 + 7);
    expect(await tokenBalance(devnet.payTo)).toBe(payToBefore + 190_000n);
  });

  it("an Idempotency-Key: a 503 leaves it free; the retry of a settled top-up answers it again (Idempotency-Replayed), credited once", async () => {
    const payer = await fundedAccount(1_000_000n);
    const before = await balance();
    const signature = await signPayment(payer, 3);
    proxy.mode = "down";
    expect((await topUp(3, signature, { "idempotency-key": "top-up-key-1" })).status).toBe(503);
    proxy.mode = "pass";
    const first = await topUp(3, signature, { "idempotency-key": "top-up-key-1" });
    expect(first.status).toBe(200);
    const retry = await topUp(3, signature, { "idempotency-key": "top-up-key-1" });
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotency-replayed")).toBe("true");
    expect(await retry.json()).toMatchObject({ credited: 3, transaction: ((await first.json()) as { transaction: string }).transaction });
    expect(await balance()).toBe(before + 3);
    // The same key with another request is refused, and changes nothing.
    const other = await topUp(4, await signPayment(payer, 4), { "idempotency-key": "top-up-key-1" });
    expect(other.status).toBe(422);
    expect(await balance()).toBe(before + 3);
  });

  it("over MCP: top_up_credits without a signature returns the requirements (text and structured), with one it settles; a replay adds nothing", async () => {
    const payer = await fundedAccount(1_000_000n);
    const before = await balance();
    const client = new Client({ name: "x402-test-agent", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${service.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    try {
      const text = (result: Awaited<ReturnType<Client["callTool"]>>) => (result.content as { type: string; text: string }[]).map((part) => part.text).join("\n");
      const asked = await client.callTool({ name: "top_up_credits", arguments: { credits: 9 } });
      expect(asked.isError).toBeFalsy();
      const structured = asked.structuredContent as { balance: number; requirements: PaymentRequired; payment_required: string };
      expect(structured.balance).toBe(before);
      expect(structured.requirements.accepts[0]).toMatchObject({ amount: "90000", asset: devnet.asset, payTo: devnet.payTo, network: devnet.network });
      expect(decodePaymentRequiredHeader(structured.payment_required)).toEqual(structured.requirements);
      // The text alone is enough: it carries the same PAYMENT-REQUIRED value and says what to do with it.
      expect(text(asked)).toContain(`PAYMENT-REQUIRED: ${structured.payment_required}`);
      expect(text(asked)).toContain("payment_signature");

      const payment = await paymentClient(payer).createPaymentPayload(decodePaymentRequiredHeader(/PAYMENT-REQUIRED: (\S+)/.exec(text(asked))![1]!));
      const signature = encodePaymentSignatureHeader(payment);
      const paid = await client.callTool({ name: "top_up_credits", arguments: { credits: 9, payment_signature: signature } });
      expect(paid.isError).toBeFalsy();
      expect(paid.structuredContent).toEqual({ balance: before + 9, credited: 9, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
      expect(text(paid)).toMatch(/Paid and settled \(transaction 0x[0-9a-f]{64}\): 9 credits added\. Balance: \d+ credits\./);

      const replayed = await client.callTool({ name: "top_up_credits", arguments: { credits: 9, payment_signature: signature } });
      expect((replayed.structuredContent as { reason: string }).reason).toMatch(/already credited/);
      expect(text(replayed)).toMatch(/^Not credited: This payment was already credited/);
      expect(await balance()).toBe(before + 9);
      const credits = await client.callTool({ name: "get_credits", arguments: {} });
      expect(text(credits)).toContain("top_up_credits");
    } finally {
      await client.close();
    }
  });

  it("a crash between verify and settle is reconciled once at start-up (settlement never sent, and settlement sent)", async () => {
    const [before, payToBefore] = [await balance(), await tokenBalance(devnet.payTo)];

    // 1: the process dies before the settlement reaches the facilitator.
    const first = await fundedAccount(1_000_000n);
    proxy.mode = "hold-settle";
    const arrived = proxy.settleArrived();
    const pending = topUp(4, await signPayment(first, 4)).catch(() => undefined);
    await arrived;
    await service.crash();
    await pending;
    expect(await tokenBalance(devnet.payTo)).toBe(payToBefore);

    // Restarted, the service settles the first through a facilitator that answers (the
    // reconciliation's settlement is not the one this case holds next).
    proxy.mode = "pass";
    service = await serve();
    await waitFor(async () => (await balance()) === before + 4, "the 4 credits settled meanwhile");

    // 2: the process dies after the facilitator settled, before it heard so.
    proxy.mode = "settle-then-hold";
    const second = await fundedAccount(1_000_000n);
    const arrivedAgain = proxy.settleArrived();
    const pendingAgain = topUp(6, await signPayment(second, 6)).catch(() => undefined);
    await arrivedAgain;
    await waitFor(async () => (await tokenBalance(devnet.payTo)) === payToBefore + 100_000n, "the payment on the chain");
    await service.crash();
    await pendingAgain;

    proxy.mode = "pass";
    service = await serve();
    await waitFor(async () => (await balance()) === before + 10, "the 10 credits reconciled");
    // Once: a restart more changes nothing, on the books or on chain.
    await service.stop();
    service = await serve();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await balance()).toBe(before + 10);
    expect(await tokenBalance(devnet.payTo)).toBe(payToBefore + 100_000n);
    const db = new Database(join(dataDir, "action-service.db"), { readonly: true });
    try {
      const statuses = db.prepare("SELECT status, count(*) AS n FROM payments GROUP BY status").all() as { status: string; n: number }[];
      expect(statuses.find((row) => row.status === "verifying" || row.status === "settling")).toBeUndefined();
    } finally {
      db.close();
    }
  }, 180_000);
});

// --- helpers ---

function reader() {
  return createPublicClient({ chain: chain(), transport: http(devnet.rpcUrl) });
}

async function tokenBalance(address: Address): Promise<bigint> {
  return reader().readContract({ address: devnet.asset, abi: TOKEN, functionName: "balanceOf", args: [address] });
}

/** A fresh account holding `tokens` of the test USDC (and ETH for gas, when it must send a transaction itself). */
async function fundedAccount(tokens: bigint, options: { gas?: boolean } = {}): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey());
  const bank = createWalletClient({ account: privateKeyToAccount(devnet.payerKey), chain: chain(), transport: http(devnet.rpcUrl) });
  const sent = await bank.writeContract({ address: devnet.asset, abi: TOKEN, functionName: "transfer", args: [account.address, tokens] });
  await reader().waitForTransactionReceipt({ hash: sent });
  if (options.gas) await reader().waitForTransactionReceipt({ hash: await bank.sendTransaction({ to: account.address, value: 10n ** 17n }) });
  return account;
}

function paymentClient(account: PrivateKeyAccount): x402Client {
  // A devnet token is not in the client's built-in asset table: allow it explicitly.
  return x402Client.fromConfig({
    schemes: [{ network: devnet.network, client: new ExactEvmScheme(account) }],
    spendControls: { allowedAssets: [{ network: devnet.network, asset: devnet.asset }] },
  });
}

function payingFetch(account: PrivateKeyAccount) {
  return wrapFetchWithPayment(fetch, paymentClient(account));
}

/** The payment payload `account` signs for the requirements the service issues for `credits`. */
async function createPayload(account: PrivateKeyAccount, credits: number): Promise<PaymentPayload> {
  const response = await topUp(credits);
  expect(response.status).toBe(402);
  return paymentClient(account).createPaymentPayload(decodePaymentRequiredHeader(response.headers.get("payment-required")!));
}

async function signPayment(account: PrivateKeyAccount, credits: number): Promise<string> {
  return encodePaymentSignatureHeader(await createPayload(account, credits));
}

function topUp(credits: number, signature?: string, headers: Record<string, string> = {}, url = service.url): Promise<Response> {
  return fetch(`${url}/v1/credits/top-ups`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...(signature ? { "payment-signature": signature } : {}), ...headers },
    body: JSON.stringify({ credits }),
  });
}

async function balance(): Promise<number> {
  const response = await fetch(`${service.url}/v1/credits`, { headers: { authorization: `Bearer ${key}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { balance: number }).balance;
}

async function expectNothingInFlight(): Promise<void> {
  const db = new Database(join(dataDir, "action-service.db"), { readonly: true });
  try {
    expect(db.prepare("SELECT id, status FROM payments WHERE status IN ('verifying', 'settling')").all(), "payments left in flight").toEqual([]);
  } finally {
    db.close();
  }
}

async function expectLedgerMatchesBalance(): Promise<void> {
  if (!service || service.child.exitCode !== null) return;
  const db = new Database(join(dataDir, "action-service.db"), { readonly: true });
  try {
    const sum = db.prepare("SELECT coalesce(sum(amount), 0) FROM credit_ledger").pluck().get() as number;
    const topUps = db.prepare("SELECT count(*) FROM credit_ledger WHERE kind = 'top_up'").pluck().get() as number;
    const settled = db.prepare("SELECT count(*) FROM payments WHERE status = 'settled'").pluck().get() as number;
    expect(sum).toBe(await balance());
    expect(topUps).toBe(settled);
  } finally {
    db.close();
  }
}

/** Polls `condition` gently; the bound is far above a restart and a reconciliation on a loaded machine. */
async function waitFor(condition: () => Promise<boolean>, what: string): Promise<void> {
  await eventually(condition, { what, timeoutMs: 60_000, everyMs: 200 });
}

/** Moves all of `account`'s test USDC back to the bank: a real transfer that makes its pending authorization unpayable. */
async function drain(account: PrivateKeyAccount): Promise<void> {
  const wallet = createWalletClient({ account, chain: chain(), transport: http(devnet.rpcUrl) });
  const all = await tokenBalance(account.address);
  const hash = await wallet.writeContract({ address: devnet.asset, abi: TOKEN, functionName: "transfer", args: [devnet.payer, all] });
  await reader().waitForTransactionReceipt({ hash });
}
