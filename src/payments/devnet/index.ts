import { serve, type ServerType } from "@hono/node-server";
import { x402Facilitator } from "@x402/core/facilitator";
import { SettleError, VerifyError, type PaymentPayload, type PaymentRequirements } from "@x402/core/types";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import ganache from "ganache";
import { Hono } from "hono";
import type { Server } from "node:http";
import { createWalletClient, defineChain, getAddress, http, publicActions, type Address, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { outlastClientKeepAlive } from "../../http-keep-alive.js";
import { compileContracts } from "./contracts.js";

/** The standard Multicall3 address: the facilitator diagnoses refused payments through it. */
const MULTICALL3_ADDRESS: Address = "0xcA11bde05977b3631167028862bE2a173976CA11";
const TOKEN_NAME = "USDC";
const TOKEN_VERSION = "2";
/** 1,000 test USDC (6 decimals) for the payer; 1,000 ETH for gas. */
const PAYER_TOKENS = 1_000_000_000n;
const GAS_BALANCE = 10n ** 21n;
/** One credit costs 0.01 test USDC. */
const PRICE_PER_CREDIT = 10_000n;

export interface DevnetOptions {
  /** The chain's id (CAIP-2 `eip155:<id>`); default 1337. */
  chainId?: number;
  host?: string;
  /** Ports for the chain's JSON-RPC and the facilitator; 0 (default) picks free ones. */
  rpcPort?: number;
  facilitatorPort?: number;
}

export interface Devnet {
  rpcUrl: string;
  facilitatorUrl: string;
  network: `eip155:${number}`;
  chainId: number;
  asset: Address;
  payTo: Address;
  payerKey: Hex;
  payer: Address;
  /** The service configuration and the devnet's own values, as printed (DESIGN §7). */
  env: Record<string, string>;
  close(): Promise<void>;
}

/**
 * A real local x402 stack (DESIGN §7): a ganache chain, an EIP-3009 test USDC deployed on it (and
 * Multicall3 at its standard address), and an x402 facilitator built from `@x402/core` and
 * `@x402/evm` that verifies signatures against the chain and settles by sending the transfer.
 * The facilitator, the payer and the pay-to address get fresh keys on every start.
 */
export async function startDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  const chainId = options.chainId ?? 1337;
  const host = options.host ?? "127.0.0.1";
  const network = `eip155:${chainId}` as const;
  const compiled = compileContracts();

  const facilitatorKey = generatePrivateKey();
  const payerKey = generatePrivateKey();
  const facilitatorAccount = privateKeyToAccount(facilitatorKey);
  const payer = privateKeyToAccount(payerKey).address;
  const payTo = privateKeyToAccount(generatePrivateKey()).address;

  const chainServer = ganache.server({
    logging: { quiet: true },
    chain: { chainId, hardfork: "shanghai" },
    wallet: { accounts: [facilitatorKey, payerKey].map((secretKey) => ({ secretKey, balance: GAS_BALANCE })) },
  });
  await chainServer.listen(options.rpcPort ?? 0, host);
  const rpcPort = (chainServer.address() as { port: number }).port;
  const rpcUrl = `http://${host}:${rpcPort}`;

  let facilitatorServer: ServerType | undefined;
  try {
    const chain = defineChain({ id: chainId, name: "action-service devnet", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [rpcUrl] } } });
    const wallet = createWalletClient({ account: facilitatorAccount, chain, transport: http(rpcUrl) }).extend(publicActions);

    const deploy = async (contract: { abi: readonly unknown[]; bytecode: Hex }, args: readonly unknown[]): Promise<Address> => {
      const hash = await wallet.deployContract({ abi: contract.abi, bytecode: contract.bytecode, args });
      const receipt = await wallet.waitForTransactionReceipt({ hash });
      if (!receipt.contractAddress) throw new Error("A devnet contract was not deployed.");
      return getAddress(receipt.contractAddress);
    };
    const asset = await deploy(compiled.token, [TOKEN_NAME, TOKEN_VERSION]);
    const multicall = await deploy(compiled.multicall, []);
    const multicallCode = await wallet.getCode({ address: multicall });
    await chainServer.provider.request({ method: "evm_setAccountCode", params: [MULTICALL3_ADDRESS, multicallCode!] });
    const minted = await wallet.writeContract({ address: asset, abi: compiled.token.abi, functionName: "mint", args: [payer, PAYER_TOKENS] });
    await wallet.waitForTransactionReceipt({ hash: minted });

    const facilitator = new x402Facilitator().register(network, new ExactEvmScheme(toFacilitatorEvmSigner(wallet as never)));
    facilitatorServer = await listen(facilitatorApp(facilitator), host, options.facilitatorPort ?? 0);
    const facilitatorUrl = `http://${host}:${(facilitatorServer.address() as { port: number }).port}`;

    const env: Record<string, string> = {
      ACTION_SERVICE_X402_FACILITATOR_URL: facilitatorUrl,
      ACTION_SERVICE_X402_NETWORK: network,
      ACTION_SERVICE_X402_ASSET: asset,
      ACTION_SERVICE_X402_ASSET_NAME: TOKEN_NAME,
      ACTION_SERVICE_X402_ASSET_VERSION: TOKEN_VERSION,
      ACTION_SERVICE_X402_PAY_TO: payTo,
      ACTION_SERVICE_X402_PRICE_PER_CREDIT: PRICE_PER_CREDIT.toString(),
      ACTION_SERVICE_X402_RPC_URL: rpcUrl,
      X402_DEVNET_PAYER_KEY: payerKey,
      X402_DEVNET_RPC_URL: rpcUrl,
    };
    const server = facilitatorServer;
    return {
      rpcUrl,
      facilitatorUrl,
      network,
      chainId,
      asset,
      payTo,
      payerKey,
      payer,
      env,
      close: async () => {
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await chainServer.close();
      },
    };
  } catch (error) {
    facilitatorServer?.close();
    await chainServer.close();
    throw error;
  }
}

interface FacilitatorRequest {
  x402Version: number;
  paymentPayload: PaymentPayload;
  paymentRequirements: PaymentRequirements;
}

/**
 * The facilitator's HTTP face, as the public facilitators serve it: `POST /verify` and
 * `POST /settle` answer 200 with the outcome even when the payment is refused; `GET /supported`.
 * Settlements go one at a time: one signing key is one transaction-nonce sequence.
 */
function facilitatorApp(facilitator: x402Facilitator): Hono {
  const app = new Hono();
  let settling: Promise<unknown> = Promise.resolve();
  const body = async (request: Request): Promise<FacilitatorRequest | undefined> => {
    const parsed = (await request.json().catch(() => undefined)) as Partial<FacilitatorRequest> | undefined;
    return parsed && typeof parsed.paymentPayload === "object" && typeof parsed.paymentRequirements === "object" ? (parsed as FacilitatorRequest) : undefined;
  };
  app.get("/supported", (c) => c.json(facilitator.getSupported()));
  app.post("/verify", async (c) => {
    const request = await body(c.req.raw);
    if (!request) return c.json({ error: "The body must be {x402Version, paymentPayload, paymentRequirements}." }, 400);
    try {
      return c.json(await facilitator.verify(request.paymentPayload, request.paymentRequirements));
    } catch (error) {
      if (error instanceof VerifyError) return c.json({ isValid: false, invalidReason: error.invalidReason, invalidMessage: error.invalidMessage, payer: error.payer });
      return c.json({ isValid: false, invalidReason: "unexpected_verify_error", invalidMessage: (error as Error).message });
    }
  });
  app.post("/settle", async (c) => {
    const request = await body(c.req.raw);
    if (!request) return c.json({ error: "The body must be {x402Version, paymentPayload, paymentRequirements}." }, 400);
    const settle = async () => {
      try {
        return await facilitator.settle(request.paymentPayload, request.paymentRequirements);
      } catch (error) {
        const network = request.paymentRequirements.network;
        if (error instanceof SettleError) return { success: false, errorReason: error.errorReason, errorMessage: error.errorMessage, payer: error.payer, transaction: error.transaction ?? "", network };
        return { success: false, errorReason: "unexpected_settle_error", errorMessage: (error as Error).message, transaction: "", network };
      }
    };
    const outcome = settling.then(settle, settle);
    settling = outcome;
    return c.json(await outcome);
  });
  return app;
}

function listen(app: Hono, hostname: string, port: number): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname, port }, () => resolve(server));
    outlastClientKeepAlive(server as Server);
    server.once("error", reject);
  });
}
