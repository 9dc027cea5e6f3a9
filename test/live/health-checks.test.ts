import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { checkOnce } from "../helpers/checks.js";
import { OffsetClock } from "../helpers/clock.js";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { rows, sql } from "../helpers/sql.js";

// Health checks (DESIGN §16) end to end: real Chromium against the sandbox, whose sessions are ended
// and remembered devices forgotten under the accounts, so signing in again meets the challenge.
// Checks run every minute here (the shortest interval), and on demand. The sandbox and the service
// share one clock, real time plus an offset: moving it forward reaches the minute, or the next TOTP
// time step, at once, for the platform and the service alike (the runners' leases keep real time).
let live: LiveService;
const clock = new OffsetClock();

beforeAll(async () => {
  live = await startLiveService({ inbox: true, clock, env: { ACTION_SERVICE_HEALTH_CHECK_MINUTES: "1" }, server: { healthCheckTickMs: 500 } });
}, 60_000);

afterAll(async () => {
  await live?.close();
});

const SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP";

/** The platform ends every session of the user and forgets its browsers: a sign-in meets the challenge again. */
async function signOutOnPlatform(handle: string): Promise<void> {
  await live.sandboxApi("POST", `/_sandbox/users/${handle}/sessions/expire`);
  await live.sandboxApi("POST", `/_sandbox/users/${handle}/devices/forget`);
}

async function account(accountId: string): Promise<any> {
  return (await live.api("GET", `/v1/accounts/${accountId}`)).json;
}

/** Waits until the account's `checked_at` is later than `after` (a check, or an action, found out). */
async function checkedAfter(accountId: string, after: string, timeoutMs = 60_000): Promise<any> {
  let found: any;
  await live.until(async () => {
    found = await account(accountId);
    return found.checked_at !== undefined && found.checked_at > after;
  }, timeoutMs, 250);
  return found;
}

async function balance(): Promise<number> {
  return (await live.api("GET", "/v1/credits")).json.balance;
}

/** The account's `account.updated` events as the outbox keeps them, oldest first. */
async function accountUpdates(accountId: string): Promise<{ status: string; status_reason?: string; checked_at?: string }[]> {
  const { store } = live.server.service;
  const workspaceId = (await store.accounts.get(accountId))!.workspace_id;
  const events = await store.events.list(workspaceId, 10_000);
  return events.filter((event) => event.type === "account.updated" && event.subject_id === accountId).map((event) => event.data as unknown as { status: string; status_reason?: string; checked_at?: string });
}

/** Moves the shared clock forward to `at` (ms since the epoch), never back. */
function moveClockTo(at: number): void {
  clock.advance(Math.max(0, at - clock.now().getTime()));
}

const TOTP_STEP_MS = 30_000;

/**
 * The connect sent this 30 s time step's code, and a step's code is sent once: signing in again
 * would wait for the next step (see the challenges test). The clock moves to it instead.
 */
function toNextTotpStep(): void {
  moveClockTo((Math.floor(clock.now().getTime() / TOTP_STEP_MS) + 1) * TOTP_STEP_MS);
}

/** Waits until the schedule has looked for due checks `count` times, each look started from now on. */
async function scheduleLooks(count: number): Promise<void> {
  const { healthChecks } = live.server.service.engine;
  const look = healthChecks.scheduleDue.bind(healthChecks);
  let looked = 0;
  const spy = vi.spyOn(healthChecks, "scheduleDue").mockImplementation(async () => {
    const queued = await look();
    looked += 1;
    return queued;
  });
  try {
    await live.until(() => looked >= count, 30_000);
  } finally {
    spy.mockRestore();
  }
}

/** The params of every check queued for the account (a check is the engine's own action of type `check`): `{ requested: true }` for one on demand. */
async function checksOf(accountId: string): Promise<Record<string, unknown>[]> {
  const found = await rows<{ params: string }>(live.server.service.store, sql`SELECT params FROM actions WHERE account_id = ${accountId} AND type = 'check'`);
  return found.map((row) => JSON.parse(row.params) as Record<string, unknown>);
}

async function connectedTotpAccount(): Promise<{ handle: string; accountId: string; connectedAt: string }> {
  const handle = await live.user("totp", { totp_secret: SECRET });
  const accountId = await live.account(handle, { totp_secret: SECRET });
  expect(await live.run(accountId, "connect")).toMatchObject({ status: "succeeded", answered_by: "totp" });
  return { handle, accountId, connectedAt: (await account(accountId)).checked_at };
}

describe("health checks", () => {
  it("a check on demand signs a TOTP account in again with nobody answering: connected, checked_at moves, nothing charged, nothing listed", async () => {
    const { handle, accountId, connectedAt } = await connectedTotpAccount();
    const before = await balance();
    await signOutOnPlatform(handle);
    toNextTotpStep();

    const queued = await live.api("POST", `/v1/accounts/${accountId}/check`);
    expect(queued.status).toBe(202);
    expect(queued.json).toMatchObject({ id: accountId, status: "connected" });
    const checked = await checkedAfter(accountId, connectedAt);
    expect(checked).toMatchObject({ status: "connected" });
    expect(checked.status_reason).toBeUndefined();
    // The check asked for did it (the schedule's would come a minute after the connect).
    expect(await checksOf(accountId)).toEqual([{ requested: true }]);

    // Signed in again: a post runs without signing in (its page is the start page's).
    expect(await live.run(accountId, "post", { text: `After the check ${handle}` })).toMatchObject({ status: "succeeded" });
    const posts = await live.sandboxApi("GET", `/_sandbox/posts?author=${handle}`);
    expect(posts).toHaveLength(1);
    // Free, and never an action anyone sees: only the connect and the post are listed and charged.
    expect(await balance()).toBe(before - 2);
    const listed = (await live.api("GET", `/v1/actions?account_id=${accountId}`)).json.data;
    expect(listed.map((action: { type: string }) => action.type).sort()).toEqual(["connect", "post"]);
  }, 120_000);

  it("a check of an account still signed in asks the platform once, without a page: connected, checked_at moves", async () => {
    const { accountId } = await connectedTotpAccount();
    const eventsBefore = (await accountUpdates(accountId)).length;
    const seen = await checkOnce(live, accountId);
    expect(seen.account).toMatchObject({ status: "connected" });
    expect(seen.pagesOpened).toBe(0);
    expect(seen.outcomes).toEqual([{ outcome: "connected" }]);
    // Nothing changed, but it was asked for: its end is an account.updated event, the account as it is.
    const events = await accountUpdates(accountId);
    expect(events.length).toBe(eventsBefore + 1);
    expect(events.at(-1)).toMatchObject({ status: "connected", checked_at: seen.account.checked_at });

    // Its context closed (idle): the next check asks from the service itself, with no browser context at all.
    await live.server.executor.forgetAccount(accountId);
    const { pool } = live.server;
    const acquired: string[] = [];
    const acquire = pool.acquire.bind(pool);
    pool.acquire = (id, ...rest) => {
      acquired.push(id);
      return acquire(id, ...rest);
    };
    try {
      const cold = await checkOnce(live, accountId);
      expect(cold.account).toMatchObject({ status: "connected" });
      expect(cold.outcomes).toEqual([{ outcome: "connected" }, { outcome: "connected" }]);
      expect(cold.pagesOpened).toBe(0);
    } finally {
      pool.acquire = acquire;
    }
    expect(acquired).not.toContain(accountId);
    expect(pool.contextOf(accountId)).toBeUndefined();
  }, 120_000);

  it("a check of a session signed in as another user opens the start page, keeps no session, and makes the account needs_auth", async () => {
    const { accountId } = await connectedTotpAccount();
    const other = await connectedTotpAccount();
    // The account's saved session becomes the other user's (as a mixed-up import would leave it).
    const { store } = live.server.service;
    await store.accounts.setSecret(accountId, "session", (await store.accounts.getSecret(other.accountId, "session"))!, new Date().toISOString());
    await live.server.executor.forgetAccount(accountId);
    const seen = await checkOnce(live, accountId);
    expect(seen.pagesOpened).toBe(1);
    expect(seen.account.status).toBe("needs_auth");
    expect(seen.account.status_reason).toContain(`Signed in as @${other.handle}, but this account is @`);
    expect(JSON.parse((await store.accounts.getSecret(accountId, "session"))!)).toEqual({ cookies: [], origins: [] });
  }, 120_000);

  it("the periodic check (every minute) signs a TOTP account in again by itself, a minute after it was last found signed in and not before", async () => {
    const { handle, accountId, connectedAt } = await connectedTotpAccount();
    const before = await balance();
    await signOutOnPlatform(handle);
    const eventsBefore = (await accountUpdates(accountId)).length;
    // Half a minute after the account was last found signed in: the schedule looks, and leaves it.
    moveClockTo(Date.parse(connectedAt) + 30_000);
    await scheduleLooks(3);
    expect(await checksOf(accountId)).toEqual([]);
    expect((await account(accountId)).checked_at).toBe(connectedAt);
    // A minute after: nobody asks, and its check comes.
    moveClockTo(Date.parse(connectedAt) + 60_000);
    const checked = await checkedAfter(accountId, connectedAt, 30_000);
    expect(checked).toMatchObject({ status: "connected" });
    expect(await checksOf(accountId)).toEqual([{}]);
    // Nobody asked and nothing changed: the schedule's check is no event.
    expect((await accountUpdates(accountId)).length).toBe(eventsBefore);
    expect(new Date(checked.checked_at).getTime() - new Date(connectedAt).getTime()).toBeGreaterThanOrEqual(60_000);
    expect(await balance()).toBe(before);
    // Its session works: a post needs no sign-in (the sandbox would ask for a code nobody gives).
    expect(await live.run(accountId, "post", { text: `Kept signed in ${handle}` })).toMatchObject({ status: "succeeded" });
  }, 120_000);

  it("an e-mail-code account whose codes no inbox receives becomes needs_auth, with an event and no page held", async () => {
    const handle = await live.user("email");
    const accountId = await live.account(handle);
    const connect = await live.run(accountId, "connect");
    expect(connect.status).toBe("needs_input");
    expect((await live.api("POST", `/v1/actions/${connect.id}/answer`, { answer: await live.latestCode(handle) })).status).toBe(202);
    expect(await live.finished(connect.id)).toMatchObject({ status: "succeeded" });
    const { checked_at: connectedAt } = await account(accountId);
    await signOutOnPlatform(handle);

    expect((await live.api("POST", `/v1/accounts/${accountId}/check`)).status).toBe(202);
    const checked = await checkedAfter(accountId, connectedAt);
    expect(checked.status).toBe("needs_auth");
    expect(checked.status_reason).toMatch(/code by e-mail/);
    expect((await accountUpdates(accountId)).at(-1)).toMatchObject({ status: "needs_auth", status_reason: checked.status_reason });
    // Nobody was asked and nothing waits: no page is open for it, no action paused.
    expect(live.server.executor.pages.size).toBe(0);
    expect(live.server.service.engine.core.runner.pausedCount).toBe(0);
    // needs_auth is not checked again by itself; a sign-in link is the way back.
    const link = await live.api("POST", `/v1/accounts/${accountId}/sign-in-links`);
    expect(link.status).toBe(201);
  }, 120_000);

  it("an e-mail-code account whose codes its inbox receives signs in again by itself", async () => {
    const { handle, accountId } = await live.inboxUser("email");
    const connect = await live.run(accountId, "connect");
    expect(await live.finished(connect.id)).toMatchObject({ status: "succeeded", answered_by: "inbox" });
    const { checked_at: connectedAt } = await account(accountId);
    await signOutOnPlatform(handle);

    expect((await live.api("POST", `/v1/accounts/${accountId}/check`)).status).toBe(202);
    expect(await checkedAfter(accountId, connectedAt)).toMatchObject({ status: "connected" });
    expect(await live.run(accountId, "post", { text: `Inbox kept me in ${handle}` })).toMatchObject({ status: "succeeded" });
  }, 120_000);

  it("a checkpoint at the sign-in makes the account blocked", async () => {
    const handle = await live.user("none");
    const accountId = await live.account(handle);
    expect(await live.run(accountId, "connect")).toMatchObject({ status: "succeeded" });
    const { checked_at: connectedAt } = await account(accountId);
    // The platform restricts the user: its sessions end and its sign-in shows a checkpoint.
    expect(await live.sandboxApi("POST", `/_sandbox/users/${handle}/restrict`)).toMatchObject({ challenge: "checkpoint" });
    expect((await live.api("POST", `/v1/accounts/${accountId}/check`)).status).toBe(202);
    const checked = await checkedAfter(accountId, connectedAt);
    expect(checked.status).toBe("blocked");
    expect(checked.status_reason).toMatch(/restricted/i);
  }, 120_000);

  it("asks for what it needs: 409 for an account never signed in, 404 for another's, 403 for a read_only key", async () => {
    const never = await live.account(await live.user("none"));
    const conflict = await live.api("POST", `/v1/accounts/${never}/check`);
    expect(conflict.status).toBe(409);
    expect(conflict.json.error.message).toMatch(/never signed in/);
    expect((await live.api("POST", "/v1/accounts/acc_nope/check")).status).toBe(404);
    const readOnly = (await live.server.service.engine.keys.issue({ role: "read_only" })).key;
    expect((await live.api("POST", `/v1/accounts/${never}/check`, undefined, { key: readOnly })).status).toBe(403);
    expect((await account(never)).status).toBe("new");
  });
});
