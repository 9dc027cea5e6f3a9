import type { BrowserContext, BrowserContextOptions, Page } from "playwright";
import { createPublicClient, http, parseAbi, type Address, type Hex, type TypedDataDomain } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, describe, expect, it } from "vitest";
import { startDevnet, type Devnet } from "../../src/payments/devnet/index.js";
import { PHONE, webAppFixture } from "../helpers/web-app.js";

// A person tops up credits on the web app's Credits page, paying with x402 from a browser wallet:
// real Chromium, a real service (SQLite, HTTP on 127.0.0.1) and the real local devnet (ganache,
// the EIP-3009 test USDC and the x402 facilitator). The wallet is an EIP-1193 provider injected
// into the page whose requests are answered in Node by a viem account holding the devnet payer's
// key: it really signs, so the facilitator really verifies and settles on chain.

const TOKEN = parseAbi(["function balanceOf(address) view returns (uint256)"]);
const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } };
/** Settling waits for a block on the devnet; the page then waits 1.2 s before it reloads. */
const PAYMENT_TIMEOUT = 30_000;

let devnet: Devnet;
// Registered before the fixture's: after-hooks run last-registered first, so the devnet closes after the service.
afterAll(async () => {
  await devnet?.close();
}, 60_000);
const web = webAppFixture(
  async () => {
    devnet = await startDevnet();
    return { env: devnet.env };
  },
  { startMs: 120_000, stopMs: 60_000 },
);

interface WalletOptions {
  /** The chain the wallet is on until the page asks it to switch; the devnet's by default. */
  chainId?: number;
  /** Answer `eth_signTypedData_v4` as a person pressing "Reject" does (EIP-1193 code 4001). */
  refuseToSign?: boolean;
}

/** What the page asked the wallet, in order. */
interface TestWallet {
  address: Address;
  methods: string[];
  switchRequests: unknown[];
}

type WalletAnswer = { result: unknown } | { error: { code: number; message: string } };

class ProviderError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Injects `window.ethereum` into every page of the context. Each request crosses to Node, where a
 * viem account with the devnet payer's key answers it; an error comes back to the page as a
 * rejected promise carrying the EIP-1193 `code`, as a real wallet's does.
 */
async function installWallet(context: BrowserContext, options: WalletOptions = {}): Promise<TestWallet> {
  const account = privateKeyToAccount(devnet.payerKey);
  const wallet: TestWallet = { address: account.address, methods: [], switchRequests: [] };
  let chainId = options.chainId ?? devnet.chainId;

  const answer = async (method: string, params: unknown[]): Promise<unknown> => {
    switch (method) {
      case "eth_requestAccounts":
      case "eth_accounts":
        return [account.address];
      case "eth_chainId":
        return `0x${chainId.toString(16)}`;
      case "wallet_switchEthereumChain": {
        wallet.switchRequests.push(params[0]);
        chainId = Number.parseInt((params[0] as { chainId: string }).chainId, 16);
        return null;
      }
      case "eth_signTypedData_v4": {
        if (options.refuseToSign) throw new ProviderError(4001, "User rejected the request.");
        const [from, json] = params as [string, string];
        if (from.toLowerCase() !== account.address.toLowerCase()) throw new ProviderError(4100, `This wallet does not hold ${from}.`);
        return account.signTypedData(typedDataForViem(JSON.parse(json)));
      }
      default:
        throw new ProviderError(4200, `The test wallet does not support ${method}.`);
    }
  };

  await context.exposeBinding("__testWalletRequest", async (_source, method: string, params: unknown[] | undefined): Promise<WalletAnswer> => {
    wallet.methods.push(method);
    try {
      return { result: await answer(method, params ?? []) };
    } catch (error) {
      return { error: { code: error instanceof ProviderError ? error.code : -32603, message: (error as Error).message } };
    }
  });
  await context.addInitScript(() => {
    const call = (window as unknown as { __testWalletRequest(method: string, params: unknown): Promise<WalletAnswer> }).__testWalletRequest;
    (window as unknown as { ethereum: unknown }).ethereum = {
      async request({ method, params }: { method: string; params?: unknown[] }) {
        const answered = await call(method, params);
        if ("error" in answered) throw Object.assign(new Error(answered.error.message), { code: answered.error.code });
        return answered.result;
      },
    };
  });
  return wallet;
}

interface Eip712Json {
  types: Record<string, { name: string; type: string }[]>;
  domain: { name: string; version: string; chainId: number | string; verifyingContract: Address };
  primaryType: string;
  message: Record<string, unknown>;
}

/** eth_signTypedData_v4 sends integers as decimal strings (or numbers); viem signs bigints, and derives EIP712Domain itself. */
function typedDataForViem(typed: Eip712Json) {
  const { EIP712Domain: _domainType, ...types } = typed.types;
  const message = Object.fromEntries(
    Object.entries(typed.message).map(([name, value]) => {
      const type = types[typed.primaryType]?.find((field) => field.name === name)?.type ?? "";
      return [name, /^u?int\d*$/.test(type) ? BigInt(value as string) : value];
    }),
  );
  const domain: TypedDataDomain = { ...typed.domain, chainId: BigInt(typed.domain.chainId) };
  return { domain, types, primaryType: typed.primaryType, message };
}

/** Signs in with the key (as a person does, through the form) and opens the Credits page. */
async function signedInCreditsPage(context: BrowserContext, key: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${web.live.url}/app/sign-in`);
  await page.locator("#key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(/\/app\/actions/);
  await page.goto(`${web.live.url}/app/credits`);
  return page;
}

async function shownBalance(page: Page): Promise<number> {
  return Number(await page.locator("#balance").innerText());
}

async function apiBalance(key = web.live.key): Promise<number> {
  const response = await web.live.api("GET", "/v1/credits", undefined, { key });
  expect(response.status).toBe(200);
  return response.json.balance as number;
}

const chain = () => createPublicClient({ transport: http(devnet.rpcUrl) });

async function usdcBalance(owner: Address): Promise<bigint> {
  return chain().readContract({ address: devnet.asset, abi: TOKEN, functionName: "balanceOf", args: [owner] });
}

/** Fills in the form, presses Pay and returns what the page finally says (its progress messages end in "…"). */
async function payTopUp(page: Page, credits: number): Promise<string> {
  await page.locator("#credits").fill(String(credits));
  await page.getByRole("button", { name: "Pay with browser wallet" }).click();
  // Watched inside the page: a paid top-up's message shows for only 1.2 s before the page reloads.
  const said = await page.waitForFunction(
    () => {
      const text = document.querySelector("#top-up-result")?.textContent ?? "";
      return text !== "" && !text.endsWith("…") && text;
    },
    undefined,
    { timeout: PAYMENT_TIMEOUT },
  );
  return (await said.jsonValue()) as string;
}

describe("topping up credits from the Credits page with a browser wallet", () => {
  const pricePerCredit = () => BigInt(devnet.env.ACTION_SERVICE_X402_PRICE_PER_CREDIT!);

  it("an admin pays 50 credits with the wallet: the balance, the ledger and the chain all show it", async () => {
    const context = await web.person.newContext(DESKTOP);
    const wallet = await installWallet(context);
    const page = await signedInCreditsPage(context, web.live.key);
    const balanceBefore = await shownBalance(page);
    expect(balanceBefore).toBe(await apiBalance());
    const payerBefore = await usdcBalance(devnet.payer);
    const payToBefore = await usdcBalance(devnet.payTo);

    const said = await payTopUp(page, 50);
    expect(said).toMatch(/^Paid: 50 credits added \(transaction 0x[0-9a-f]{64}\)\.$/);
    const transaction = /0x[0-9a-f]{64}/.exec(said)![0] as Hex;
    await page.waitForURL(/\/app\/credits\?done=top_up$/, { timeout: PAYMENT_TIMEOUT });

    expect(await shownBalance(page)).toBe(balanceBefore + 50);
    expect(await apiBalance()).toBe(balanceBefore + 50);
    expect(await page.locator(".notice:not([hidden])").innerText()).toContain("Top-up paid");
    const newestTopUp = page.getByRole("row").filter({ hasText: "Top-up (x402)" }).first();
    await expect.poll(() => newestTopUp.getByRole("cell").nth(2).innerText()).toBe("+50");
    // After the page has moved on, the ledger still names the settlement on chain.
    expect(await newestTopUp.getByRole("cell").nth(3).innerText()).toBe(`transaction ${transaction}`);

    // The money moved on chain, once, by the price of 50 credits, in the transaction the page named.
    const price = pricePerCredit() * 50n;
    expect(await usdcBalance(devnet.payer)).toBe(payerBefore - price);
    expect(await usdcBalance(devnet.payTo)).toBe(payToBefore + price);
    const receipt = await chain().getTransactionReceipt({ hash: transaction });
    expect(receipt.status).toBe("success");
    expect(receipt.to?.toLowerCase()).toBe(devnet.asset.toLowerCase());

    expect(wallet.methods).toEqual(["eth_requestAccounts", "eth_chainId", "eth_signTypedData_v4"]);
    expect(wallet.switchRequests).toEqual([]);
    await page.screenshot({ path: "test-artifacts/web-top-up-desktop.png", fullPage: true });
    await context.close();
  });

  it("on a phone, a wallet on another chain is asked to switch to the devnet and the top-up is paid", async () => {
    const context = await web.person.newContext(PHONE);
    const wallet = await installWallet(context, { chainId: 1 });
    const page = await signedInCreditsPage(context, web.live.key);
    const balanceBefore = await apiBalance();
    const payerBefore = await usdcBalance(devnet.payer);

    expect(await payTopUp(page, 7)).toMatch(/^Paid: 7 credits added \(transaction 0x[0-9a-f]{64}\)\.$/);
    await page.waitForURL(/\/app\/credits\?done=top_up$/, { timeout: PAYMENT_TIMEOUT });

    expect(wallet.switchRequests).toEqual([{ chainId: `0x${devnet.chainId.toString(16)}` }]);
    expect(await shownBalance(page)).toBe(balanceBefore + 7);
    expect(await apiBalance()).toBe(balanceBefore + 7);
    expect(await usdcBalance(devnet.payer)).toBe(payerBefore - pricePerCredit() * 7n);
    // The page fits the phone: nothing scrolls sideways.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.screenshot({ path: "test-artifacts/web-top-up-phone.png", fullPage: true });
    await context.close();
  });

  it("a person who declines in the wallet is told so, and nothing is paid or credited", async () => {
    const context = await web.person.newContext(DESKTOP);
    const wallet = await installWallet(context, { refuseToSign: true });
    const page = await signedInCreditsPage(context, web.live.key);
    const balanceBefore = await apiBalance();
    const payerBefore = await usdcBalance(devnet.payer);

    expect(await payTopUp(page, 20)).toBe("You declined in the wallet; nothing was paid.");

    expect(wallet.methods).toContain("eth_signTypedData_v4");
    expect(page.url()).toBe(`${web.live.url}/app/credits`);
    expect(await shownBalance(page)).toBe(balanceBefore);
    expect(await apiBalance()).toBe(balanceBefore);
    expect(await usdcBalance(devnet.payer)).toBe(payerBefore);
    await expect(page.getByRole("button", { name: "Pay with browser wallet" }).isEnabled()).resolves.toBe(true);
    await context.close();
  });

  it("a browser without a wallet is told none was found, and nothing changes", async () => {
    const context = await web.person.newContext(DESKTOP);
    const page = await signedInCreditsPage(context, web.live.key);
    expect(await page.evaluate(() => "ethereum" in window)).toBe(false);
    const balanceBefore = await apiBalance();
    const payerBefore = await usdcBalance(devnet.payer);

    expect(await payTopUp(page, 20)).toContain("No browser wallet was found");

    expect(await shownBalance(page)).toBe(balanceBefore);
    expect(await apiBalance()).toBe(balanceBefore);
    expect(await usdcBalance(devnet.payer)).toBe(payerBefore);
    await context.close();
  });

  it("an operator key sees no top-up form, and the top-up endpoint refuses it with 403", async () => {
    const operator = await web.live.server.service.engine.keys.issue({ role: "operator" });
    const context = await web.person.newContext(DESKTOP);
    const page = await signedInCreditsPage(context, operator.key);
    await expect.poll(() => page.locator("#balance").count()).toBe(1);
    expect(await page.locator("#top-up").count()).toBe(0);
    expect(await page.getByRole("button", { name: "Pay with browser wallet" }).count()).toBe(0);
    const balanceBefore = await apiBalance();

    const refused = await page.evaluate(async () => {
      const csrf = document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')!.content;
      const response = await fetch("/app/credits/top-ups", { method: "POST", headers: { "content-type": "application/json", "x-csrf-token": csrf }, body: JSON.stringify({ credits: 5 }) });
      return { status: response.status, body: (await response.json()) as { error: { code: string; message: string } } };
    });
    // Refused for its role, not for a missing form token.
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain("may not top up credits");
    expect(await apiBalance()).toBe(balanceBefore);
    await context.close();
  });
});
