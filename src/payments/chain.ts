import { createPublicClient, http, parseAbi, type Address, type Hex } from "viem";

const EIP3009 = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
]);

/** How far back a used authorization is looked for: well past any payment's 300-s validity. */
const LOOKBACK_BLOCKS = 10_000n;

/**
 * What the chain says of an EIP-3009 authorization, for a payment whose settlement outcome was
 * lost (the process died, or the facilitator did not answer): the transaction that used it, or
 * `unused`, or `unknown` when it was used but no transfer is found (canceled by its signer, or
 * older than the look-back).
 */
export async function findSettlement(rpcUrl: string, asset: string, authorizer: string, nonce: string): Promise<{ transaction: string } | "unused" | "unknown"> {
  const client = createPublicClient({ transport: http(rpcUrl, { timeout: 10_000, retryCount: 1 }) });
  const used = await client.readContract({ address: asset as Address, abi: EIP3009, functionName: "authorizationState", args: [authorizer as Address, nonce as Hex] });
  if (!used) return "unused";
  const latest = await client.getBlockNumber();
  const logs = await client.getLogs({
    address: asset as Address,
    event: EIP3009[1],
    args: { authorizer: authorizer as Address, nonce: nonce as Hex },
    fromBlock: latest > LOOKBACK_BLOCKS ? latest - LOOKBACK_BLOCKS : 0n,
    toBlock: latest,
  });
  const found = logs.at(-1);
  return found?.transactionHash ? { transaction: found.transactionHash } : "unknown";
}
