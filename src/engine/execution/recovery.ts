import { setTimeout as sleep } from "node:timers/promises";
import type { ActionRecord } from "../../store/records.js";
import type { RunnerRecord, Store } from "../../store/index.js";
import type { Clock } from "../clock.js";
import type { Lifecycle } from "./lifecycle.js";
import type { Logger } from "../logger.js";
import { retryWhileBusy } from "../../store/index.js";
import { isDeadLocalProcess } from "./process-identity.js";
import { MAY_HAVE_BEEN_DONE, NOTHING_DONE, commitNote, fenceOf, type Run } from "./run.js";

/** The message of an action recovered past its commit point. */
export const INTERRUPTED_AFTER_COMMIT =
  "Interrupted: the process running it stopped after the driver had begun the step that cannot be undone (e.g. clicking Post or Send), so the platform may already have done it. It was not run again; check the platform before you retry.";

/**
 * Ends the leases of runners whose process is proved gone from this machine (a `serve` killed with
 * -9 and started again), so their actions need not wait out the lease. Proved by the identity each
 * registered (`process-identity.ts`: host, boot, PID namespace and the process's start), never by
 * a host name and pid alone: another container's runner is waited for.
 */
export async function expireDeadLocalRunners(lifecycle: Lifecycle, leaseClock: Clock): Promise<void> {
  const { store } = lifecycle;
  const now = leaseClock.now().toISOString();
  for (const runner of await store.runners.list()) {
    if (runner.lease_expires_at <= now) continue;
    if (isDeadLocalProcess(runner.host, runner.pid)) await store.runners.expire(runner.id, now);
  }
}

/**
 * The runners registered, as this process last read them: read again only when the heartbeat's
 * survey (`WorkDue.runners`) says who is registered changed. Whether one of them is a process
 * proved gone from this machine is then asked of this machine, not of the database: an idle
 * coordinator does not read the runners table at every heartbeat to learn that nobody died.
 */
export class RegisteredRunners {
  #seen: string | undefined;
  #runners: RunnerRecord[] = [];

  /** Whether a runner registered under `fingerprint` is a process proved gone from this machine. */
  async anyDeadHere(store: Store, fingerprint: string): Promise<boolean> {
    if (fingerprint !== this.#seen) {
      this.#runners = await store.runners.list();
      this.#seen = fingerprint;
    }
    return this.#runners.some((runner) => isDeadLocalProcess(runner.host, runner.pid));
  }
}

/** Orphans recovered per transaction: the write lock is held for one batch at a time. */
const RECOVERY_BATCH = 200;

/**
 * Recovers the actions of runners whose lease expired (DESIGN §3, §11): one that had not
 * reached its commit point goes back to `queued` and runs again (a `needs_input` one asks
 * afresh); one past it fails with `browser_error`, saying the platform may already have done
 * it. Whichever live runner sees them first does it; each change is checked in the transaction
 * that makes it, so two runners never recover one action twice. Returns how many were recovered.
 */
export async function recoverOrphans(lifecycle: Lifecycle, logger: Logger, leaseClock: Clock): Promise<number> {
  const { store } = lifecycle;
  const leaseNow = (): string => leaseClock.now().toISOString();
  let recovered = 0;
  const orphans = await store.actions.orphaned(leaseNow());
  // A batch per transaction (each action's change a savepoint in it): a commit per action made a
  // start after a crash with hundreds of actions in flight wait a commit for each.
  for (let first = 0; first < orphans.length; first += RECOVERY_BATCH) {
    await store.transaction(async () => {
      for (const action of orphans.slice(first, first + RECOVERY_BATCH)) {
        // Still held by the same runner, and that runner still without a live lease.
        const stillOrphaned = async (now: ActionRecord): Promise<boolean> =>
          now.runner_id === action.runner_id && !(now.runner_id !== undefined && (await store.runners.isLive(now.runner_id, leaseNow())));
        const done = action.committed_at
          ? await lifecycle.finish(action.id, { status: "failed", code: "browser_error", message: INTERRUPTED_AFTER_COMMIT }, stillOrphaned)
          : await lifecycle.requeue(action.id, [action.status], stillOrphaned);
        if (done) {
          recovered += 1;
          logger.info({ action_id: action.id, from: action.status, runner_id: action.runner_id, committed: Boolean(action.committed_at) }, "recovered an action of a runner that is gone");
        }
      }
    });
  }
  await store.runners.removeExpired(leaseNow());
  return recovered;
}

/**
 * The actions the database says `runnerId` holds and no run here drives (`driven` says which it
 * does): a claim that committed without its answer coming back (`CommitUnknownError`: the
 * connection was lost while COMMIT was on its way), or a run that ended here without its end
 * written (`ranHere`). No recovery takes such an action, as its runner is alive. One never run,
 * before its commit point, is returned to be run here, as the claim meant; one past it fails as
 * interrupted; one at `needs_input` (its page is gone) goes back to the queue, to ask again. One
 * whose run ended here fails, saying whether the platform may have done it: it is not run again
 * (what ended that run abnormally would end the next). Each write is fenced on the action's lease
 * number and the runner's lease (`leaseHolds`).
 */
export async function unrunActions(
  lifecycle: Lifecycle,
  logger: Logger,
  runnerId: string,
  runs: { driven: (actionId: string) => boolean; ranHere: (actionId: string) => boolean },
  leaseHolds: (runnerId: string) => Promise<boolean>,
): Promise<ActionRecord[]> {
  const toRun: ActionRecord[] = [];
  for (const action of await lifecycle.store.actions.heldBy(runnerId)) {
    if (runs.driven(action.id)) continue;
    const fields = { action_id: action.id, from: action.status, runner_id: runnerId, committed: Boolean(action.committed_at) };
    const ranHere = runs.ranHere(action.id);
    if (action.status === "running" && !action.committed_at && !ranHere) {
      logger.warn(fields, "runs an action this runner holds and did not run (a claim whose answer was lost)");
      toRun.push(action);
      continue;
    }
    const sameClaim = fenceOf(action, leaseHolds);
    const message = ranHere ? `Interrupted: its run ended without its outcome recorded. ${action.committed_at ? MAY_HAVE_BEEN_DONE : NOTHING_DONE}` : INTERRUPTED_AFTER_COMMIT;
    const done =
      ranHere || action.committed_at
        ? await lifecycle.finish(action.id, { status: "failed", code: "browser_error", message }, sameClaim)
        : await lifecycle.requeue(action.id, [action.status], sameClaim);
    if (done) logger.warn(fields, "ended the run of an action this runner held and no longer ran");
  }
  return toRun;
}

/**
 * Hands back a stopping runner's runs: an action before its commit point goes back to the queue
 * (another runner, or the next start, runs it again; a paused one asks afresh); past it, it may
 * finish within `graceMs`, else fails saying the platform may already have done it. Resolves once
 * every run has ended after its abort, or `graceMs` later: a driver that does not stop when told
 * does not keep the service from stopping (it is logged).
 */
export async function handBack(runs: readonly Run[], lifecycle: Lifecycle, logger: Logger, graceMs: number): Promise<void> {
  await Promise.all(
    runs.map(async (run) => {
      const id = run.action.id;
      const requeued = await retryWhileBusy(() => lifecycle.requeue(id, ["running", "needs_input"], run.fence), { giveUpAfterMs: 5_000 }).catch(() => false);
      if (!requeued) {
        const finished = await Promise.race([run.done.then(() => true), sleep(graceMs, false, { ref: false })]);
        if (!finished) {
          const message = `Interrupted: the service stopped while the action was running. ${await commitNote(lifecycle.store, id)}`;
          await retryWhileBusy(() => lifecycle.finish(id, { status: "failed", code: "browser_error", message }, run.fence), { giveUpAfterMs: 5_000 }).catch((error: unknown) =>
            logger.error({ err: error, action_id: id }, "could not record the interrupted action"),
          );
        }
      }
      run.controller.abort(new Error("service stopping"));
    }),
  );
  const running = new Set(runs);
  const ended = runs.map((run) => run.done.then(() => void running.delete(run), () => void running.delete(run)));
  await Promise.race([Promise.all(ended), sleep(graceMs, undefined, { ref: false })]);
  for (const run of running) logger.error({ action_id: run.action.id }, "the action's run did not stop when told to; the service stopped without waiting for it");
}
