import { spawn } from "node:child_process";
import { createPublicClient, http, parseAbi, type Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { expect, it } from "vitest";
import { X402_VARIABLES, loadConfig } from "../../src/config.js";
import { CLI } from "../helpers/processes.js";

// `action-service x402-devnet` as a developer runs it: a real process that prints its
// configuration as NAME=value lines and serves a chain and a facilitator until stopped.
it("x402-devnet prints the service configuration and the payer's key, serves the chain and the facilitator, and stops on SIGTERM", async () => {
  const child = spawn(process.execPath, [CLI, "x402-devnet"], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const env = await new Promise<Record<string, string>>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (/^X402_DEVNET_RPC_URL=.*\n/m.test(stdout)) resolve(Object.fromEntries(stdout.trim().split("\n").map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string])));
    });
    child.once("exit", (code) => reject(new Error(`x402-devnet exited (${code}): ${stderr}`)));
  });
  try {
    // Every line is NAME=value; the seven DESIGN §7 variables make a complete service configuration.
    for (const line of stdout.trim().split("\n")) expect(line).toMatch(/^[A-Z0-9_]+=\S+$/);
    for (const name of [...X402_VARIABLES, "X402_DEVNET_PAYER_KEY", "X402_DEVNET_RPC_URL"]) expect(env[name], name).toBeTruthy();
    const config = loadConfig(env);
    expect(config.x402.missing).toEqual([]);
    expect(config.x402.settings).toMatchObject({ network: "eip155:1337", assetName: "USDC", assetVersion: "2", pricePerCredit: 10_000n });

    const supported = (await (await fetch(`${env.ACTION_SERVICE_X402_FACILITATOR_URL}/supported`)).json()) as { kinds: { x402Version: number; scheme: string; network: string }[] };
    expect(supported.kinds).toContainEqual(expect.objectContaining({ x402Version: 2, scheme: "exact", network: "eip155:1337" }));

    const chain = createPublicClient({ transport: http(env.X402_DEVNET_RPC_URL) });
    expect(await chain.getChainId()).toBe(1337);
    const token = parseAbi(["function balanceOf(address) view returns (uint256)", "function name() view returns (string)", "function version() view returns (string)"]);
    const asset = env.ACTION_SERVICE_X402_ASSET as Address;
    const payer = privateKeyToAccount(env.X402_DEVNET_PAYER_KEY as `0x${string}`).address;
    expect(await chain.readContract({ address: asset, abi: token, functionName: "name" })).toBe("USDC");
    expect(await chain.readContract({ address: asset, abi: token, functionName: "version" })).toBe("2");
    expect(await chain.readContract({ address: asset, abi: token, functionName: "balanceOf", args: [payer] })).toBe(1_000_000_000n);
    // Multicall3 sits at its standard address, for the facilitator's diagnostics.
    expect(await chain.getCode({ address: "0xcA11bde05977b3631167028862bE2a173976CA11" })).toMatch(/^0x[0-9a-f]{100,}$/);
  } finally {
    child.kill("SIGTERM");
  }
  expect(await exited).toBe(0);
}, 120_000);
