import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import { loadConfig, type Config } from "../config.js";
import type { PublicAction } from "../domain/public.js";
import { createLogger } from "../engine/logger.js";
import { startDevnet } from "../payments/devnet/index.js";
import { startServer } from "../server.js";

const SANDBOX_PASSWORD = "sandbox-password";

/**
 * `action-service demo`: a sandbox, the x402 devnet and the service in one process, then a
 * narrated run through the REST API: connect carol (answering the emailed code from the
 * outbox), post, look up a person, read a conversation, and buy credits with an x402 payment
 * settled on the devnet. Exits 0 only if every step succeeded.
 */
export async function runDemo(config: Config): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), "action-service-demo-"));
  const devnet = await startDevnet();
  const x402 = loadConfig({ ...process.env, ...devnet.env }).x402;
  const settings: Config = { ...config, dataDir, masterKey: undefined, port: 0, sandboxPort: 0, sandboxUrlGiven: false, host: "127.0.0.1", x402 };
  const server = await startServer(settings, { logger: createLogger("error"), sandbox: true, runnerKind: "demo" });
  const say = (line: string): void => console.log(line);
  let ok = true;
  try {
    const key = server.service.firstKey!.key;
    const api = async (method: string, path: string, body?: unknown): Promise<any> => {
      const response = await fetch(server.url + path, {
        method,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return response.json();
    };
    const sandboxUrl = server.sandbox!.url;
    say(`Sandbox platform: ${sandboxUrl}`);
    say(`Service:          ${server.url}`);
    server.service.engine.onChange((action) => say(`  ${action.type} ${action.id.slice(0, 12)}…  → ${action.status}`));

    const account = await api("POST", "/v1/accounts", { platform: "sandbox", username: "carol", password: SANDBOX_PASSWORD });
    say(`\nAdded account carol (${account.id}); the sandbox emails carol a code at sign-in.`);

    const run = async (title: string, type: string, params: Record<string, unknown> = {}): Promise<PublicAction> => {
      say(`\n${title}`);
      let action: PublicAction = await api("POST", "/v1/actions?wait=30", { account_id: account.id, type, params });
      while (action.status === "needs_input" && action.challenge) {
        say(`  challenge: ${action.challenge.kind}: ${action.challenge.message}`);
        const outbox = (await (await fetch(`${sandboxUrl}/_sandbox/outbox?to=carol`)).json()) as { code: string }[];
        say(`  read the code from the sandbox outbox and answered it`);
        action = await api("POST", `/v1/actions/${action.id}/answer?wait=30`, { answer: outbox[0]!.code });
      }
      while (action.status === "queued" || action.status === "running") action = await api("GET", `/v1/actions/${action.id}?wait=30`);
      if (action.status === "succeeded") say(`  result: ${JSON.stringify(action.result)}`);
      else {
        ok = false;
        say(`  ${action.status}${action.error ? `: ${action.error.code}: ${action.error.message}` : ""}`);
      }
      return action;
    };

    await run("Connect carol", "connect");
    await run("Post as carol", "post", { text: `Hello from the action-service demo, ${new Date().toISOString()}` });
    await run("Look up dave", "lookup_person", { handle: "dave" });
    await run("Read carol's conversation with dave", "lookup_conversation", { with: "dave" });
    const credits = await api("GET", "/v1/credits");
    say(`\nCredits left: ${credits.balance}`);

    say(`\nBuy 50 credits with x402 (test USDC on the local chain ${devnet.network}, facilitator ${devnet.facilitatorUrl})`);
    const topUp = (signature?: string): Promise<Response> =>
      fetch(`${server.url}/v1/credits/top-ups`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...(signature ? { "payment-signature": signature } : {}) },
        body: JSON.stringify({ credits: 50 }),
      });
    const required = decodePaymentRequiredHeader((await topUp()).headers.get("payment-required") ?? "");
    const price = required.accepts[0]!;
    say(`  402: pay ${Number(price.amount) / 1e6} USDC to ${price.payTo}`);
    const payer = privateKeyToAccount(devnet.payerKey);
    const payment = await x402Client.fromConfig({ schemes: [{ network: devnet.network, client: new ExactEvmScheme(payer) }], spendControls: { allowedAssets: [{ network: devnet.network, asset: devnet.asset }] } }).createPaymentPayload(required);
    say(`  signed by ${payer.address} (EIP-3009 authorization), sent as PAYMENT-SIGNATURE`);
    const paid = await topUp(encodePaymentSignatureHeader(payment));
    const receipt = (await paid.json()) as { balance?: number; credited?: number; transaction?: string; error?: { message: string } };
    if (paid.status === 200) say(`  ${paid.status}: credited ${receipt.credited}, balance ${receipt.balance}, settled in transaction ${receipt.transaction}`);
    else {
      ok = false;
      say(`  ${paid.status}: ${receipt.error?.message}`);
    }
    say(ok ? "\nDemo finished: every step succeeded." : "\nDemo finished with a failed step.");
  } finally {
    await server.close();
    await devnet.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  process.exit(ok ? 0 : 1);
}
