import { CHECK_TYPE } from "../../src/domain/health.js";
import type { LiveService } from "./live-service.js";

/** What one health check on demand did: the account after it, the pages it opened, what it found. */
export interface CheckSeen {
  account: any;
  pagesOpened: number;
  outcomes: unknown[];
}

/**
 * Asks for a check of the account (`POST /v1/accounts/{id}/check`) and waits until its `checked_at`
 * moves past what it was, watching the pages the executor opens meanwhile.
 */
export async function checkOnce(live: LiveService, accountId: string, timeoutMs = 60_000): Promise<CheckSeen> {
  const before = (await live.api("GET", `/v1/accounts/${accountId}`)).json.checked_at ?? "";
  const finishedChecks = async () => (await live.server.service.store.actions.withStatus(["succeeded", "failed"])).filter((action) => action.account_id === accountId && action.type === CHECK_TYPE);
  const finishedBefore = (await finishedChecks()).length;
  let pagesOpened = 0;
  const onPage = (_actionId: string, page: unknown): void => void (page && (pagesOpened += 1));
  live.server.executor.events.on("page", onPage);
  let account: any;
  try {
    const queued = await live.api("POST", `/v1/accounts/${accountId}/check`);
    if (queued.status !== 202) throw new Error(`the check was not queued: ${queued.status} ${JSON.stringify(queued.json)}`);
    await live.until(async () => {
      account = (await live.api("GET", `/v1/accounts/${accountId}`)).json;
      // The account's checked_at and the check's own end are two writes: wait for both.
      return account.checked_at !== undefined && account.checked_at > before && (await finishedChecks()).length > finishedBefore;
    }, timeoutMs, 250);
  } finally {
    live.server.executor.events.off("page", onPage);
  }
  const checks = await finishedChecks();
  return { account, pagesOpened, outcomes: checks.map((check) => check.result ?? check.error_code) };
}
