import type { ChallengeKind } from "../domain/challenges.js";
import { CHECK_TYPE, checkOutcome } from "../domain/health.js";
import { isTerminal, type ActionStatus } from "../domain/status.js";
import type { ChangeOrigin } from "../engine/execution/index.js";
import type { ActionRecord, ChallengeRecord } from "../store/records.js";
import type { ActionSeries } from "./series.js";

/** Actions followed at once; past this the oldest is forgotten (its durations are then not observed). */
const REMEMBERED = 10_000;
/** The challenge kind a stored TOTP secret answers. */
const TOTP_KIND: ChallengeKind = "two_factor_code";

/** What this coordinator last knew of an action, to tell one change from the one before. */
interface Seen {
  status: ActionStatus;
  lease: number;
  updatedAt: string;
  answeredBy: ActionRecord["answered_by"];
  /** When it was last queued (ms), for the wait once started. */
  queuedAt: number | undefined;
  /** When this coordinator started it (ms), for the run once ended. */
  startedAt: number | undefined;
  /** The challenge last counted, so a refused answer's re-ask is not a new challenge. */
  challengeId: string | undefined;
}

/** What the watch reads besides the changes themselves. */
export interface WatchSources {
  /** This coordinator's runner id now (a start is a claim under it). */
  runnerId(): string;
  latestChallenge(actionId: string): Promise<ChallengeRecord | undefined>;
}

/**
 * Turns the lifecycle's `change` events into the action series (DESIGN §16). Counters move only
 * for changes committed here, so adding every coordinator's series counts each change once;
 * other processes' changes only keep the picture current (a run started here and ended by a
 * cancel elsewhere still has its duration observed here).
 */
export class ActionWatch {
  readonly #seen = new Map<string, Seen>();
  /** Counts waiting on a read of the store (a challenge's kind). */
  readonly #counting = new Set<Promise<void>>();

  constructor(
    private readonly series: ActionSeries,
    private readonly sources: WatchSources,
  ) {}

  observe(action: ActionRecord, origin: ChangeOrigin): void {
    const known = this.#seen.get(action.id);
    const before = known && { ...known };
    const seen = this.#remember(action, known);
    if (isCheck(action)) {
      if (origin === "here") this.#countCheck(action, before);
    } else {
      if (origin === "here") this.#countHere(action, before, seen);
      this.#timeRun(action, seen);
    }
    if (isTerminal(action.status)) this.#seen.delete(action.id);
  }

  /** Updates what is known of the action in place (a challenge count in flight writes to the same record), newest last. */
  #remember(action: ActionRecord, known: Seen | undefined): Seen {
    const seen: Seen = known ?? { status: action.status, lease: action.lease, updatedAt: action.updated_at, answeredBy: action.answered_by, queuedAt: undefined, startedAt: undefined, challengeId: undefined };
    if (action.status === "queued" && (known === undefined || known.status !== "queued")) {
      seen.queuedAt = Date.parse(action.updated_at);
      seen.startedAt = undefined;
    }
    Object.assign(seen, { status: action.status, lease: action.lease, updatedAt: action.updated_at, answeredBy: action.answered_by });
    this.#seen.delete(action.id);
    this.#seen.set(action.id, seen);
    if (this.#seen.size > REMEMBERED) this.#seen.delete(this.#seen.keys().next().value!);
    return seen;
  }

  #countCheck(check: ActionRecord, before: Seen | undefined): void {
    if (before?.status === check.status) return;
    const outcome = checkOutcome(check);
    if (outcome) this.series.healthChecks.inc({ outcome });
  }

  #countHere(action: ActionRecord, before: Seen | undefined, seen: Seen): void {
    const changed = before?.status !== action.status;
    if (changed) this.series.actions.inc({ platform: action.platform, type: action.type, status: action.status, ...(action.error_code ? { error_code: action.error_code } : {}) });
    if (action.status === "needs_input" && changed) this.#track(this.#countChallenge(action.id, seen));
    if (action.status !== "running") return;
    if (this.#isClaim(action, before)) {
      seen.startedAt = Date.parse(action.updated_at);
      const queuedAt = before?.queuedAt ?? Date.parse(action.created_at);
      this.series.waitSeconds.observe({ platform: action.platform, type: action.type }, Math.max(0, seen.startedAt - queuedAt) / 1000);
    } else if (before?.status === "needs_input" || (before === undefined && action.runner_id !== this.sources.runnerId())) {
      this.#track(this.#latestChallenge(action.id).then((challenge) => this.#countAnswer(challenge)));
    } else if (!changed && action.answered_by !== undefined && !(before?.answeredBy === action.answered_by && before.updatedAt === action.updated_at)) {
      // The only changes that keep the status: the run answered a challenge itself (told twice, the
      // same record is counted once) — a TOTP step claimed, or a code the inbox already held, used
      // as its challenge opened (which never paused, so the challenge is counted here too).
      if (action.answered_by === "totp") this.series.answers.inc({ kind: TOTP_KIND, answered_by: "totp" });
      else this.#track(this.#countChallenge(action.id, seen).then((challenge) => this.#countAnswer(challenge)));
    }
  }

  /** Resolves once the counts under way have been made (a scrape then shows every change told so far). */
  async settled(): Promise<void> {
    await Promise.all(this.#counting);
  }

  /** Keeps a count under way until it is made (a count that failed is lost, never the process). */
  #track(counting: Promise<unknown>): void {
    const made = counting.then(
      () => undefined,
      () => undefined,
    );
    this.#counting.add(made);
    void made.then(() => this.#counting.delete(made));
  }

  /** A start: running under this runner with a lease number not seen before (an answer keeps the lease). */
  #isClaim(action: ActionRecord, before: Seen | undefined): boolean {
    return action.runner_id === this.sources.runnerId() && (before === undefined || before.lease !== action.lease || before.status === "queued");
  }

  /** Run durations are observed by the coordinator that started the action, whoever ended it. */
  #timeRun(action: ActionRecord, seen: Seen): void {
    if (!isTerminal(action.status) || seen.startedAt === undefined) return;
    const endedAt = Date.parse(action.finished_at ?? action.updated_at);
    this.series.runSeconds.observe({ platform: action.platform, type: action.type, status: action.status }, Math.max(0, endedAt - seen.startedAt) / 1000);
  }

  /** Counts the action's latest challenge once, and returns it (its answer may be counted from the same read). */
  async #countChallenge(actionId: string, seen: Seen): Promise<ChallengeRecord | undefined> {
    const challenge = await this.#latestChallenge(actionId);
    if (challenge && challenge.id !== seen.challengeId) {
      seen.challengeId = challenge.id;
      this.series.challenges.inc({ kind: challenge.kind });
    }
    return challenge;
  }

  /** An answer moved the action on: recorded on its challenge, else the page moved by itself (a person approved or solved it). */
  #countAnswer(challenge: ChallengeRecord | undefined): void {
    if (challenge) this.series.answers.inc({ kind: challenge.kind, answered_by: challenge.answered_by ?? "person" });
  }

  /** A store that is busy or closing costs one count, never the process. */
  async #latestChallenge(actionId: string): Promise<ChallengeRecord | undefined> {
    return this.sources.latestChallenge(actionId).catch(() => undefined);
  }
}

/** Health checks are actions of their own type (`CHECK_TYPE`), which the action types may not list. */
function isCheck(action: ActionRecord): boolean {
  return String(action.type) === CHECK_TYPE;
}
