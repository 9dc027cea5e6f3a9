import { join } from "node:path";
import { loadPlatformFile } from "../src/platforms/declared/index.js";
import { startLiveService, type LiveService } from "../test/helpers/live-service.js";
import { user } from "./execution.js";
import { median } from "./support.js";

/** Rounds of the declared-driver row; each round posts once through each driver, alternating which goes first. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);

const FILE = join(import.meta.dirname, "..", "examples", "drivers", "sandbox.platform.json");

/**
 * (q) A post on a warm account through the declared sandbox driver (examples/drivers/sandbox.platform.json)
 * ÷ through the built-in sandbox driver: one service, one sandbox, one Chromium, two accounts, one on
 * each platform, posting through `POST /v1/actions?wait=30` in alternating rounds after 3 warm-up
 * posts each. Medians of `BENCH_ROUNDS` (15).
 */
export async function declaredPostRatio(): Promise<{ declared: number; builtIn: number; ratio: number }> {
  const live = await startLiveService({
    env: { ACTION_SERVICE_FREE_CREDITS: "100000", ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "1000000" },
    sandboxDrivers: [await loadPlatformFile(FILE)],
  });
  try {
    const builtInAccount = await connected(live, "sandbox");
    const declaredAccount = await connected(live, "sandbox-declared");
    let serial = 0;
    const post = async (accountId: string): Promise<number> => {
      const start = performance.now();
      const response = await live.api("POST", "/v1/actions?wait=30", { account_id: accountId, type: "post", params: { text: `bench ${Date.now()} ${++serial}` } });
      if (response.json.status !== "succeeded") throw new Error(`post ${response.json.status}: ${JSON.stringify(response.json.error)}`);
      return performance.now() - start;
    };
    for (let i = 0; i < 3; i++) {
      await post(builtInAccount);
      await post(declaredAccount);
    }
    const declared: number[] = [];
    const builtIn: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2 === 0) {
        builtIn.push(await post(builtInAccount));
        declared.push(await post(declaredAccount));
      } else {
        declared.push(await post(declaredAccount));
        builtIn.push(await post(builtInAccount));
      }
    }
    return { declared: median(declared), builtIn: median(builtIn), ratio: median(declared) / median(builtIn) };
  } finally {
    await live.close();
  }
}

async function connected(live: LiveService, platform: string): Promise<string> {
  const accountId = await live.account(await user(live), { platform });
  const action = await live.run(accountId, "connect");
  if (action.status !== "succeeded") throw new Error(`connect on ${platform}: ${action.status}`);
  return accountId;
}
