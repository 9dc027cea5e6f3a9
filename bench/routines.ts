import { startLiveService, type LiveService } from "../test/helpers/live-service.js";
import { user } from "./execution.js";
import { median } from "./support.js";

/** Rounds of the routine row; each round posts once as a routine and once as the built-in post, alternating which goes first. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);

/** The built-in sandbox post's steps once signed in (src/platforms/sandbox/actions.ts), as a routine: the same locators, nothing more. */
const POST_NOTE = {
  platform: "sandbox",
  name: "post_note",
  description: "Posts a note on the feed, as the built-in post does.",
  params: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  steps: [
    { fill: { label: "What's on your mind?" }, value: "{{text}}" },
    { click: { role: "button", name: "Post", exact: true } },
    { wait_for: { text: "Your post is live." } },
  ],
};

/** The value at the 90th percentile (nearest rank). */
function p90(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.9) - 1)]!;
}

export interface RoutineFigures {
  routine: { median: number; p90: number };
  builtIn: { median: number; p90: number };
  ratio: number;
  /** Bytes (UTF-8) of a `ui_changed` failure's snapshot of the sandbox's reworded profile page. */
  snapshotBytes: number;
}

/**
 * (r) A routine that does what the built-in post does (fill the composer, click Post, wait for
 * "Your post is live.") on a warm account ÷ the built-in post on another warm account: one service,
 * one sandbox, one Chromium, `POST /v1/actions?wait=30`, 3 warm-up runs each, then `BENCH_ROUNDS`
 * (15) rounds, which goes first alternating; medians and p90s. Then the size of the snapshot a
 * routine's `ui_changed` failure carries for the sandbox's profile page (reworded, as a redesign).
 */
export async function routineFigures(): Promise<RoutineFigures> {
  const live = await startLiveService({ env: { ACTION_SERVICE_FREE_CREDITS: "100000", ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "1000000" } });
  try {
    const saved = await live.api("POST", "/v1/routines", POST_NOTE);
    if (saved.status !== 201) throw new Error(`routine: ${saved.status} ${JSON.stringify(saved.json)}`);
    const routineAccount = await connected(live);
    const builtInAccount = await connected(live);
    let serial = 0;
    const run = async (accountId: string, body: { type: string; params: Record<string, unknown> }): Promise<number> => {
      const start = performance.now();
      const response = await live.api("POST", "/v1/actions?wait=30", { account_id: accountId, ...body });
      if (response.json.status !== "succeeded") throw new Error(`${body.type} ${response.json.status}: ${JSON.stringify(response.json.error)}`);
      return performance.now() - start;
    };
    const asRoutine = () => run(routineAccount, { type: "routine", params: { routine: "post_note", params: { text: `bench routine ${Date.now()} ${++serial}` } } });
    const asBuiltIn = () => run(builtInAccount, { type: "post", params: { text: `bench post ${Date.now()} ${++serial}` } });
    for (let i = 0; i < 3; i++) {
      await asRoutine();
      await asBuiltIn();
    }
    const routine: number[] = [];
    const builtIn: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2 === 0) {
        builtIn.push(await asBuiltIn());
        routine.push(await asRoutine());
      } else {
        routine.push(await asRoutine());
        builtIn.push(await asBuiltIn());
      }
    }
    return {
      routine: { median: median(routine), p90: p90(routine) },
      builtIn: { median: median(builtIn), p90: p90(builtIn) },
      ratio: median(routine) / median(builtIn),
      snapshotBytes: await profileSnapshotBytes(live, routineAccount),
    };
  } finally {
    await live.close();
  }
}

/** A routine that saves the profile's bio, run after the sandbox reworded that page: its failure's snapshot, in bytes. */
async function profileSnapshotBytes(live: LiveService, accountId: string): Promise<number> {
  const saved = await live.api("POST", "/v1/routines", {
    platform: "sandbox",
    name: "update_bio",
    params: { type: "object", properties: { bio: { type: "string" } }, required: ["bio"] },
    steps: [{ goto: "/settings/profile" }, { fill: { label: "Bio", exact: true }, value: "{{bio}}" }, { click: { role: "button", name: "Save", exact: true } }],
  });
  if (saved.status !== 201) throw new Error(`routine: ${saved.status} ${JSON.stringify(saved.json)}`);
  await live.sandboxApi("POST", "/_sandbox/settings", { profile_reworded: true });
  try {
    const failed = await live.run(accountId, "routine", { routine: "update_bio", params: { bio: "Gardener" } });
    const snapshot = failed.error?.details?.snapshot as string | undefined;
    if (failed.status !== "failed" || failed.error.code !== "ui_changed" || snapshot === undefined) throw new Error(`expected ui_changed with a snapshot: ${JSON.stringify(failed)}`);
    return Buffer.byteLength(snapshot, "utf8");
  } finally {
    await live.sandboxApi("POST", "/_sandbox/settings", { profile_reworded: false });
  }
}

async function connected(live: LiveService): Promise<string> {
  const accountId = await live.account(await user(live));
  const action = await live.run(accountId, "connect");
  if (action.status !== "succeeded") throw new Error(`connect: ${action.status}`);
  return accountId;
}
