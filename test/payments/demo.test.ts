import { spawn } from "node:child_process";
import { expect, it } from "vitest";
import { CLI } from "../helpers/processes.js";

// `action-service demo` as a user runs it: a real process with the sandbox, Chromium and the
// x402 devnet; every step must succeed, ending with a top-up settled on the devnet's chain.
it("the demo runs every step, ending with credits bought with x402 on the devnet", async () => {
  const child = spawn(process.execPath, [CLI, "demo"], { env: { ...process.env, ACTION_SERVICE_LOG_LEVEL: "error" }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  expect(output, output).toContain("Demo finished: every step succeeded.");
  expect(code).toBe(0);
  expect(output).toMatch(/Credits left: (\d+)/);
  const left = Number(/Credits left: (\d+)/.exec(output)![1]);
  expect(output).toMatch(new RegExp(`200: credited 50, balance ${left + 50}, settled in transaction 0x[0-9a-f]{64}`));
}, 240_000);
