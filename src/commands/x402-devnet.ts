import { startDevnet, type Devnet } from "../payments/devnet/index.js";

/**
 * `action-service x402-devnet`: a real local x402 stack (DESIGN §7). Prints the service
 * configuration and `X402_DEVNET_PAYER_KEY` / `X402_DEVNET_RPC_URL` as `NAME=value` lines on
 * stdout (so `set -a; . <(…)` or an env file takes them as they are), a summary on stderr, and
 * runs until stopped.
 */
export async function runX402Devnet(options: { port?: number; host?: string }): Promise<Devnet> {
  const devnet = await startDevnet({ host: options.host, facilitatorPort: options.port });
  console.error(`x402 devnet: chain ${devnet.network} at ${devnet.rpcUrl}, test USDC at ${devnet.asset}, facilitator at ${devnet.facilitatorUrl}.`);
  console.error(`The payer ${devnet.payer} holds 1,000 test USDC; a credit costs ${Number(devnet.env.ACTION_SERVICE_X402_PRICE_PER_CREDIT) / 1e6} USDC. Start the service with these variables:`);
  for (const [name, value] of Object.entries(devnet.env)) console.log(`${name}=${value}`);
  return devnet;
}
