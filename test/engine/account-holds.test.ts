import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../helpers/clock.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { eventually } from "../helpers/scripted-executor.js";

// An owner's sign-in hold on an account lives in the store (DESIGN §11, issue 40 item 4): two
// coordinators (engines with stores of their own) on one database, the hold taken through A.
const harnesses: Harness[] = [];
afterEach(async () => {
  for (const harness of harnesses.splice(0).reverse()) await harness.destroy();
});

type EngineOptions = NonNullable<Parameters<typeof createHarness>[0]>["engine"];

/** Two coordinators (engines) on one store, each with its own clock and `engine` options. */
async function twoCoordinators(
  aEngine: EngineOptions = { internalUrl: "http://coordinator-a.internal:8787" },
  bEngine: EngineOptions = { internalUrl: "http://coordinator-b.internal:8787", runner: { heartbeatMs: 100 } },
): Promise<{ a: Harness; b: Harness }> {
  const a = await createHarness({ clock: new FakeClock(new Date().toISOString()), engine: aEngine });
  harnesses.push(a);
  const b = await createHarness({ location: a.location, masterKey: a.masterKey, adminKey: a.adminKey, clock: new FakeClock(new Date().toISOString()), engine: bEngine });
  harnesses.push(b);
  return { a, b };
}

async function account(h: Harness, username: string): Promise<string> {
  return (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username, password: "pw" } })).json.id as string;
}

async function post(h: Harness, accountId: string, text: string): Promise<string> {
  const created = await h.request("POST", "/v1/actions", { body: { account_id: accountId, type: "post", params: { text } } });
  expect(created.status).toBe(202);
  return created.json.id as string;
}

/** The other coordinator's heartbeat in the release test: far longer than any wake-up may take. */
const B_HEARTBEAT_MS = 60_000;
/** No claim for this long: the wake-ups a coordinator's own commits caused are over. */
const QUIET_MS = 1_000;

/** Counts `h`'s claims of queued actions, so a test can wait until none has run for a while. */
function watchClaims(h: Harness): { quietFor(ms: number): boolean } {
  const { lifecycle } = h.engine.core;
  const claim = lifecycle.claim.bind(lifecycle);
  let running = 0;
  let lastEnded = Date.now();
  lifecycle.claim = async (...args) => {
    running += 1;
    try {
      return await claim(...args);
    } finally {
      running -= 1;
      lastEnded = Date.now();
    }
  };
  return { quietFor: (ms) => running === 0 && Date.now() - lastEnded >= ms };
}

const statusOf = async (h: Harness, id: string): Promise<string | undefined> => (await h.store.actions.get(id))?.status;

describe("an owner's sign-in hold on an account", () => {
  it("keeps every coordinator from claiming the account's actions until it is released; then they run", { timeout: 90_000 }, async () => {
    const { a, b } = await twoCoordinators();
    const held = await account(a, "held");
    const other = await account(a, "other");
    expect(await a.engine.core.runner.holdAccount(held)).toBe(true);

    // Created through B, the held account's action first: the claim that takes the other one saw it too.
    const waiting = await post(b, held, "waits for the sign-in");
    const passing = await post(b, other, "runs meanwhile");
    await eventually(async () => (await statusOf(b, passing)) === "succeeded", { what: "the other account's action to run" });
    expect(await statusOf(b, waiting)).toBe("queued");
    // A sign-in page opened on B for the held account is A's: B's live view goes there.
    const holdersAccount = (await b.store.accounts.get(held))!;
    expect(await b.engine.live.pageHolder({ kind: "sign_in", account: holdersAccount, link: undefined as never, expiresAt: "" })).toBe("http://coordinator-a.internal:8787");
    // And B cannot take a second hold on it.
    expect(await b.engine.core.runner.holdAccount(held)).toBe(false);

    a.engine.core.runner.releaseAccount(held);
    await eventually(async () => (await statusOf(b, waiting)) === "succeeded", { what: "the held account's action to run once released" });
  });

  it("wakes the other coordinators when released: one claims the account's queued action at once, not at its heartbeat", { timeout: 90_000 }, async () => {
    // A holds and cannot claim (no run slots), so only B can run the action. B's heartbeat, the
    // backstop that would find the action without a wake-up, comes after a minute: B claims before
    // it only if the release itself woke it (PostgreSQL: a notification; SQLite: the file's
    // data_version, which any commit by another connection changes).
    const { a, b } = await twoCoordinators({ maxConcurrent: 0 }, { runner: { heartbeatMs: B_HEARTBEAT_MS, leaseMs: 2 * B_HEARTBEAT_MS } });
    const claims = watchClaims(b);
    const held = await account(a, "held");
    expect(await a.engine.core.runner.holdAccount(held)).toBe(true);
    const waiting = await post(b, held, "runs as soon as the sign-in ends");
    // B has passed it over, and the claims its own commits woke it for are over: after the release
    // nothing but the release can wake it (on the old code it then waits for its heartbeat).
    await eventually(() => claims.quietFor(QUIET_MS), { what: "B's claims after the create to end" });
    expect(await statusOf(b, waiting)).toBe("queued");

    const released = Date.now();
    a.engine.core.runner.releaseAccount(held);
    const claimed = await eventually(
      async () => {
        const action = await b.store.actions.get(waiting);
        return action?.status !== "queued" && action;
      },
      { what: "B to claim the released account's action", timeoutMs: B_HEARTBEAT_MS / 2 },
    );
    const afterMs = Date.now() - released;
    expect(claimed.runner_id).toBe(b.engine.core.runner.runnerId);
    // Well before B's next heartbeat (the bound is generous for a loaded machine; what it guards against is a minute).
    expect(afterMs).toBeLessThan(B_HEARTBEAT_MS / 2);
  });

  it("is given up when its coordinator's lease ends: another coordinator claims the account's actions", { timeout: 90_000 }, async () => {
    const { a, b } = await twoCoordinators();
    const held = await account(a, "held");
    expect(await a.engine.core.runner.holdAccount(held)).toBe(true);
    // A is gone as far as the fleet can tell (its heartbeat registers it again, under a new id).
    await a.store.runners.expire(a.engine.core.runner.runnerId, new Date().toISOString());
    const waiting = await post(b, held, "runs once the holder is gone");
    await eventually(async () => (await statusOf(b, waiting)) === "succeeded", { what: "the action of an account whose holder died to run" });
  });
});
