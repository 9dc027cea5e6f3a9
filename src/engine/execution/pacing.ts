import { CHECK_TYPE } from "../../domain/health.js";
import type { ActionType } from "../../domain/actions.js";
import type { ActionErrorCode } from "../../domain/errors.js";
import { cooldownMs, effectivePaces, paceWait, type Pace, type Paces } from "../../domain/pace.js";
import type { ClaimCandidate, Store } from "../../store/index.js";
import type { AccountRecord, ActionRecord } from "../../store/records.js";
import type { PlatformInfo } from "./executor.js";

const DAY_MS = 24 * 3_600_000;

/** Why a queued action may not start yet: its account's pace, or the platform's "slow down". */
export type PaceHold = { kind: "pace"; type: ActionType; pace: Pace; until: Date } | { kind: "cooldown"; type: ActionType; until: Date };

/**
 * Pacing per account (DESIGN §16), checked where actions are claimed: the drivers' default paces
 * merged with each account's overrides, the starts they count, and the cool-downs `rate_limited`
 * failures leave. `random` is the jitter's source (0 ≤ r < 1).
 */
export class Pacing {
  constructor(
    private readonly store: Store,
    private readonly platforms: readonly PlatformInfo[],
    private readonly random: () => number = Math.random,
  ) {}

  /** The account's effective paces: its platform's defaults, field by field replaced by its overrides. */
  pacesOf(account: Pick<AccountRecord, "platform" | "pace">): Paces {
    return effectivePaces(this.platforms.find((platform) => platform.name === account.platform)?.paces, account.pace);
  }

  /**
   * What holds an action of `type` on the account back at `now`, with the time it may start
   * (jittered when `jitter`): undefined when it may start now.
   */
  async holdOf(accountId: string, type: ActionType, now: Date, options: { jitter: boolean }): Promise<PaceHold | undefined> {
    const account = await this.store.accounts.get(accountId);
    if (!account) return undefined;
    const cooldown = await this.store.paceCooldowns.get(accountId, type);
    const pace = this.pacesOf(account)[type];
    const starts = pace ? await this.store.actions.startsSince(accountId, type, new Date(now.getTime() - DAY_MS).toISOString()) : [];
    return this.#hold(type, pace, cooldown?.until, starts, now, options);
  }

  /**
   * When each of a claim's candidates may start, by id, for those that may not start now: what
   * `holdOf` judges, for all of them at once (their accounts' paces and cool-downs came with them;
   * one read of the starts their paces count). An action started once (then requeued) was counted
   * already, and a health check is never paced (it takes only idle slots, and is free).
   */
  async notBefore(candidates: readonly ClaimCandidate[], now: Date): Promise<Map<string, Date>> {
    const judged = candidates.flatMap(({ action, accountPace, cooledUntil }) => {
      const type = action.type;
      if (action.started_at || type === CHECK_TYPE) return [];
      return [{ action, type, cooledUntil, pace: this.pacesOf({ platform: action.platform, pace: parsePace(accountPace) })[type] }];
    });
    const paced = judged.filter((candidate) => candidate.pace).map(({ action }) => action.account_id);
    const starts = await this.store.actions.startsSinceOf(paced, new Date(now.getTime() - DAY_MS).toISOString());
    const notBefore = new Map<string, Date>();
    for (const { action, type, pace, cooledUntil } of judged) {
      const counted = starts.filter((start) => start.account_id === action.account_id && start.type === type).map((start) => start.started_at);
      const hold = this.#hold(type, pace, cooledUntil, counted, now, { jitter: true });
      if (hold) notBefore.set(action.id, hold.until);
    }
    return notBefore;
  }

  #hold(type: ActionType, pace: Pace | undefined, cooledUntilAt: string | undefined, starts: Date[], now: Date, options: { jitter: boolean }): PaceHold | undefined {
    const cooledUntil = cooledUntilAt && new Date(cooledUntilAt) > now ? new Date(cooledUntilAt) : undefined;
    const paced = paceWait(pace, starts, now, options.jitter ? this.random : () => 0);
    if (cooledUntil && (!paced || cooledUntil >= paced)) return { kind: "cooldown", type, until: cooledUntil };
    if (paced && pace) return { kind: "pace", type, pace, until: paced };
    return undefined;
  }
}

/** An account's pace overrides as stored (JSON, or none). */
function parsePace(stored: string | null): Paces {
  return stored === null ? {} : (JSON.parse(stored) as Paces);
}

/**
 * What an ended action tells its account's pace, in the transaction that ends it: a `rate_limited`
 * failure starts (or doubles) the cool-down of its type — the wait the platform named, else 15 min
 * per strike doubling up to 24 h — and holds the account's queued actions of that type until then;
 * a success of that type ends it. Returns the ids of the actions it held back.
 */
export async function recordPaceOutcome(store: Store, action: ActionRecord, outcome: { code?: ActionErrorCode; retryAfterSeconds?: number | undefined }, now: Date): Promise<string[]> {
  if (action.type === CHECK_TYPE) return [];
  if (outcome.code === undefined) {
    await store.paceCooldowns.clear(action.account_id, action.type);
    return [];
  }
  if (outcome.code !== "rate_limited") return [];
  const strikes = ((await store.paceCooldowns.get(action.account_id, action.type))?.strikes ?? 0) + 1;
  const waitMs = outcome.retryAfterSeconds !== undefined ? Math.min(outcome.retryAfterSeconds * 1000, DAY_MS) : cooldownMs(strikes);
  const until = new Date(now.getTime() + waitMs).toISOString();
  await store.paceCooldowns.put({ account_id: action.account_id, type: action.type, until, strikes });
  return store.actions.deferQueued(action.account_id, action.type, until, now.toISOString());
}
