import { createHash } from "node:crypto";
import { AppError } from "../domain/errors.js";
import type { Principal } from "../domain/keys.js";
import type { EngineCore } from "./core.js";

/** Responses are kept for replay at least this long. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export interface StoredResponse {
  status: number;
  body: unknown;
}

/**
 * A canonical hash of a request body (keys sorted at every depth), so the same request
 * through REST or MCP, in any key order, is recognised as a replay.
 */
export function requestHash(body: unknown): string {
  const keys = new Set<string>();
  const collect = (value: unknown): void => {
    if (value && typeof value === "object") {
      for (const [key, inner] of Object.entries(value)) {
        keys.add(key);
        collect(inner);
      }
    }
  };
  collect(body);
  return createHash("sha256").update(JSON.stringify(body, [...keys].sort())).digest("hex");
}

/**
 * Runs `work` at most once per (workspace, key): a replay of the same request gets
 * the stored response, a different request under the key is a 422, and one that
 * arrives while the first is still in flight a 409. `work` receives `attach` to
 * link the record to the action it creates.
 */
export async function runOnce(
  core: EngineCore,
  principal: Principal,
  key: string,
  request: unknown,
  work: (attach: (actionId: string) => void) => Promise<StoredResponse>,
): Promise<StoredResponse & { replayed: boolean }> {
  const { store, lifecycle } = core;
  const workspaceId = principal.workspaceId;
  const hash = requestHash(request);
  const existing = store.transaction(() => {
    const now = lifecycle.clock.now();
    const record = store.idempotency.get(workspaceId, key, now.toISOString());
    if (record) {
      if (record.request_hash !== hash) {
        throw new AppError("invalid_request", "This Idempotency-Key was already used with a different request; use a new key.", { idempotency_key: key });
      }
      if (record.state === "in_flight") {
        throw new AppError("conflict", "A request with this Idempotency-Key is still in progress; retry after it has answered.", { idempotency_key: key });
      }
      return record;
    }
    store.idempotency.begin({
      workspace_id: workspaceId,
      key,
      request_hash: hash,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + IDEMPOTENCY_TTL_MS).toISOString(),
    });
    return undefined;
  });
  if (existing) return { status: existing.response_status!, body: JSON.parse(existing.response_body!) as unknown, replayed: true };
  try {
    const response = await work((actionId) => store.transaction(() => store.idempotency.attachAction(workspaceId, key, actionId)));
    store.transaction(() => store.idempotency.complete(workspaceId, key, response.status, JSON.stringify(response.body)));
    return { ...response, replayed: false };
  } catch (error) {
    // A request that failed created nothing: the key is free again.
    store.transaction(() => store.idempotency.forget(workspaceId, key));
    throw error;
  }
}

/** After a restart no request is in flight: finish the records of created actions, free the rest. */
export function settleInFlight(core: EngineCore, render: (actionId: string) => StoredResponse): void {
  const { store } = core;
  store.transaction(() => {
    for (const record of store.idempotency.inFlight()) {
      if (record.action_id) {
        const response = render(record.action_id);
        store.idempotency.complete(record.workspace_id, record.key, response.status, JSON.stringify(response.body));
      } else {
        store.idempotency.forget(record.workspace_id, record.key);
      }
    }
  });
}
