import { CHECK_TYPE } from "../../domain/health.js";
import type { ActionType } from "../../domain/actions.js";
import type { ActionErrorCode } from "../../domain/errors.js";
import { cooldownMs, effectivePaces, paceWait, type Pace, type Paces } from "../../domain/pace.js";
import type { Store } from "../../store/index.js";
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
    const cooledUntil = cooldown && new Date(cooldown.until) > now ? new Date(cooldown.until) : undefined;
    const pace = this.pacesOf(account)[type];
    const starts = pace ? await this.store.actions.startsSince(accountId, type, new Date(now.getTime() - DAY_MS).toISOString()) : [];
    const paced = paceWait(pace, starts, now, options.jitter ? this.random : () => 0);
    if (cooledUntil && (!paced || cooledUntil >= paced)) return { kind: "cooldown", type, until: cooledUntil };
    if (paced && pace) return { kind: "pace", type, pace, until: paced };
    return undefined;
  }

  /** When a claimed candidate may start, undefined for now. An action started once (then requeued) was counted already. */
  async notBefore(action: ActionRecord, now: Date): Promise<Date | undefined> {
    // A health check is never paced (it takes only idle slots, and is free).
    if (action.started_at || action.type === CHECK_TYPE) return undefined;
    return (await this.holdOf(action.account_id, action.type, now, { jitter: true }))?.until;
  }
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
