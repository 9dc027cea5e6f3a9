import { createHash } from "node:crypto";
import { z } from "zod";
import { AppError } from "../domain/errors.js";
import type { Principal } from "../domain/keys.js";
import { randomToken, retryWhileBusy, retryWhileOutcomeUnknown } from "../store/index.js";
import type { ActionRecord } from "../store/records.js";
import type { IdempotencyRecord } from "../store/repositories/idempotency.js";
import { visibleAction } from "./access/index.js";
import * as actions from "./actions.js";
import type { EngineCore } from "./core.js";

/** An Idempotency-Key: what REST takes as a header and MCP as `idempotency_key`. */
export const IdempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x20-\x7e]+$/, "must be printable ASCII")
  .describe("Any unique string (1–255 printable ASCII characters); the same key and request run once. Kept at least 24 hours.");

/** Records are kept for replay at least this long, then purged. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * A canonical hash of a request body (keys sorted at every depth), so the same request
 * through REST or MCP, in any key order, is recognised as a replay. Bodies reach it
 * validated, so their depth is bounded (domain/json.ts).
 */
export function requestHash(body: unknown): string {
  const keys = new Set<string>();
  const pending: unknown[] = [body];
  for (let value = pending.pop(); value !== undefined; value = pending.pop()) {
    if (value === null || typeof value !== "object") continue;
    for (const [key, inner] of Object.entries(value)) {
      keys.add(key);
      pending.push(inner);
    }
  }
  return createHash("sha256").update(JSON.stringify(body, [...keys].sort())).digest("hex");
}

/** The answer to a request sent again while the first one with its key has not answered yet. */
export function keyInFlight(key: string): AppError {
  return new AppError("conflict", "A request with this Idempotency-Key is still in progress; retry after it has answered.", { idempotency_key: key });
}

/**
 * Looks up an Idempotency-Key for a request: a key with no live record is claimed in one statement;
 * one with a record is looked at in one transaction: a different request under it
 * is a 422; a record found is handed to `existing`, whose answer is returned (it throws
 * `keyInFlight` while the first request has not answered, or returns undefined when the record
 * holds nothing to replay any more); otherwise the key is claimed, in flight, for this request
 * under the token `claim` (what its later writes to the record name: `KeyFence`), and undefined
 * is returned.
 */
export async function claimKey<T>(
  core: EngineCore,
  workspaceId: string,
  key: string,
  hash: string,
  existing: (record: IdempotencyRecord) => T | undefined | Promise<T | undefined>,
  claim: string = newClaim(),
): Promise<T | undefined> {
  const { store, lifecycle } = core;
  const claimed = (now: Date) => ({
    workspace_id: workspaceId,
    key,
    request_hash: hash,
    runner_id: core.runner.runnerId,
    claim,
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + IDEMPOTENCY_TTL_MS).toISOString(),
  });
  // Tried again when its answer was lost (the connection dropped as it committed): the key is then
  // found under this request's own claim, which is this request's to go on with. Left alone, such a
  // claim would hold the key in flight for good under a live runner, each retry of it a 409.
  const claimOnce = async (): Promise<T | undefined> => {
    const at = lifecycle.clock.now();
    // A new key (nearly every request's) is claimed by one statement; a live record is looked at as before.
    if (await store.idempotency.claimIfFree(claimed(at), at.toISOString())) return undefined;
    return store.transaction(async () => {
      const now = lifecycle.clock.now();
      const record = await store.idempotency.get(workspaceId, key, now.toISOString());
      if (record?.claim === claim) return undefined;
      if (record) {
        if (record.request_hash !== hash) {
          throw new AppError("invalid_request", "This Idempotency-Key was already used with a different request; use a new key.", { idempotency_key: key });
        }
        const answer = await existing(record);
        if (answer !== undefined) return answer;
      }
      await store.idempotency.begin(claimed(now));
      return undefined;
    });
  };
  return retryWhileOutcomeUnknown(claimOnce);
}

/** A new claim token: what tells this request's claim of a key from any later one. */
export function newClaim(): string {
  return randomToken(16);
}

/** Thrown inside a create's transaction when its claim on the key has lapsed: the action is rolled back. */
class LostClaim extends Error {}

/**
 * Creates an action at most once per (workspace, Idempotency-Key). A replay is a request
 * like any other: role, allow-list and params are checked first, and it gets the action
 * as it is now, as this key may see it. A different body under the key is a 422; the same
 * key while the first request is still in flight, a 409. The record names the action and
 * holds no response body, so nothing secret (a live-link token) is kept at rest.
 *
 * `respond` runs while the record is in flight (e.g. REST's `?wait`); its result is returned.
 *
 * Fenced (DESIGN §11): the action is inserted and attached to the key in one transaction that
 * keeps it only while the key is still this request's claim. A request whose coordinator stalled
 * past its lease (the claim settled as abandoned, perhaps claimed again by the client's retry
 * elsewhere) creates nothing: it answers with what the key names now, or a 409.
 */
export async function createActionOnce(
  core: EngineCore,
  principal: Principal,
  key: string,
  input: actions.CreateAction,
  respond: (action: ActionRecord) => Promise<ActionRecord>,
): Promise<{ action: ActionRecord; replayed: boolean }> {
  await actions.authorizeCreate(core, principal, input);
  const { store } = core;
  const workspaceId = principal.workspaceId;
  const hash = requestHash(input);
  const claim = newClaim();
  const existing = await claimKey(
    core,
    workspaceId,
    key,
    hash,
    (record) => {
      if (record.state === "in_flight" || record.action_id === undefined) throw keyInFlight(key);
      return record.action_id;
    },
    claim,
  );
  if (existing) return { action: await visibleAction(store, principal, existing), replayed: true };
  let created: actions.Created;
  try {
    // As any create (actions.CREATE): the key's attachment is one conditional update, fenced on its claim.
    created = await store.transaction(async () => {
      const inserted = await actions.insertAction(core, principal, input);
      if (!(await store.idempotency.attachAction(workspaceId, key, inserted.action.id, claim))) throw new LostClaim();
      return inserted;
    }, actions.CREATE);
  } catch (error) {
    if (error instanceof LostClaim) return afterLostClaim(core, principal, key, hash);
    const made = await retryWhileBusy(() => settleFailedCreate(core, workspaceId, key, claim), { checksItsEffect: true });
    const action = made === undefined ? undefined : await store.actions.get(made);
    if (!action) throw error;
    created = { action, warmElsewhere: false };
  }
  actions.announceCreated(core, created);
  try {
    return { action: await respond(created.action), replayed: false };
  } finally {
    await retryWhileBusy(() => store.idempotency.complete(workspaceId, key, { claim }), { checksItsEffect: true });
  }
}

/**
 * After a keyed create threw: whether it created its action is told by the key, to which the same
 * transaction attached it. Created (the connection was lost while the create committed), the key is
 * done and names it, which is returned: the request answers with it, and a retry of the key gets it,
 * never a second action. Not created, the key is free again, if still this request's claim.
 */
async function settleFailedCreate(core: EngineCore, workspaceId: string, key: string, claim: string): Promise<string | undefined> {
  const { store } = core;
  return store.transaction(async () => {
    const record = await store.idempotency.get(workspaceId, key, core.lifecycle.now());
    if (record?.claim === claim && record.action_id !== undefined) {
      await store.idempotency.complete(workspaceId, key, { claim });
      return record.action_id;
    }
    await store.idempotency.forget(workspaceId, key, { claim });
    return undefined;
  });
}

/**
 * The answer of a create whose claim on its key lapsed before it could create anything: the
 * action the key names now (another request with the key created it), else a 409.
 */
async function afterLostClaim(core: EngineCore, principal: Principal, key: string, hash: string): Promise<{ action: ActionRecord; replayed: boolean }> {
  const record = await core.store.idempotency.get(principal.workspaceId, key, core.lifecycle.now());
  if (record?.request_hash === hash && record.action_id !== undefined && record.state === "done") {
    return { action: await visibleAction(core.store, principal, record.action_id), replayed: true };
  }
  if (record?.state === "in_flight") throw keyInFlight(key);
  throw new AppError(
    "conflict",
    "This request lost its hold on the Idempotency-Key while it was in progress (the service stalled past its lease), so it created nothing; send it again with the same key.",
    { idempotency_key: key },
  );
}

/**
 * Requests in flight in a process that is gone: records that created an action are done, the rest
 * freed — each only while it is still the claim that was found abandoned. Runners' leases are
 * judged on the lease clock, as the runners judge them.
 */
export async function settleAbandoned(core: EngineCore): Promise<void> {
  const { store } = core;
  await store.transaction(async () => {
    for (const record of await store.idempotency.abandoned(core.runner.leaseNow())) {
      const fence = { claim: record.claim };
      if (record.action_id || record.payment_id) await store.idempotency.complete(record.workspace_id, record.key, fence);
      else await store.idempotency.forget(record.workspace_id, record.key, fence);
    }
  });
}

/** Forgets records older than their 24 hours; returns how many went. */
export function purgeExpiredKeys(core: EngineCore): Promise<number> {
  return core.store.idempotency.purgeExpired(core.lifecycle.now());
}
