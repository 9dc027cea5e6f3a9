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

async function twoCoordinators(): Promise<{ a: Harness; b: Harness }> {
  const a = await createHarness({ clock: new FakeClock(new Date().toISOString()), engine: { internalUrl: "http://coordinator-a.internal:8787" } });
  harnesses.push(a);
  const b = await createHarness({
    location: a.location,
    masterKey: a.masterKey,
    adminKey: a.adminKey,
    clock: new FakeClock(new Date().toISOString()),
    engine: { internalUrl: "http://coordinator-b.internal:8787", runner: { heartbeatMs: 100 } },
  });
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
