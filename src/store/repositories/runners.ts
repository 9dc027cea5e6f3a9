import type { Kysely } from "kysely";
import { timeIn } from "../database-time.js";
import type { Queries } from "../queries.js";
import type { Schema } from "../schema.js";
import { toWorkDue, workDueColumns, type WorkDue } from "./work-due.js";

/** A process that runs actions, and until when its lease holds. */
export interface RunnerRecord {
  id: string;
  kind: string;
  /** The machine and process instance (`recovery.ts` `processIdentity`): a dead local process is told by it. */
  host: string;
  pid: number;
  public_url: string | null;
  /** Where the other coordinators reach it (DESIGN §11): a live view of a page it holds is proxied there. */
  internal_url: string | null;
  started_at: string;
  lease_expires_at: string;
  /** Run slots it had free at its last renewal: another runner's claim passes over an account it ran last only while it has one. */
  free_slots: number;
}

/**
 * Runners and their leases (DESIGN §11). Every lease is judged by one clock: on PostgreSQL the
 * database's, read in the statement (`timeIn`), whatever the `now` a coordinator passes says; on
 * SQLite that `now` (one machine, one clock).
 */
export class RunnerRepository {
  constructor(
    private readonly q: Queries,
    /** Lease renewal's own connection (PostgreSQL: outside the pool; never inside a transaction). */
    private readonly leaseDb: Kysely<Schema>,
  ) {}

  #at(now: string, plusMs = 0): ReturnType<typeof timeIn> {
    return timeIn(this.q.adapter.dialect, now, plusMs);
  }

  /** Registers a runner whose lease holds `leaseMs` from now; returns now by the clock that judges leases. */
  async register(runner: Omit<RunnerRecord, "started_at" | "lease_expires_at" | "free_slots"> & { free_slots?: number }, { now, leaseMs }: { now: string; leaseMs: number }): Promise<string> {
    const row = await this.leaseDb
      .insertInto("runners")
      .values({ ...runner, free_slots: runner.free_slots ?? 0, started_at: this.#at(now), lease_expires_at: this.#at(now, leaseMs) })
      .returning("started_at")
      .executeTakeFirstOrThrow();
    return row.started_at;
  }

  /**
   * Extends a runner's lease to `leaseMs` from now while it still holds; undefined once it has
   * expired (others may already have recovered its actions: it must give them up, not renew its
   * claim on them), else now by the clock that judges leases, and what the heartbeat may have to
   * do (`WorkDue`): read in the same statement, so an idle coordinator sends nothing else. The
   * expiry is judged when the statement runs: a renewal held up on its way (a frozen connection)
   * never revives a lease that ran out meanwhile.
   */
  async renew(id: string, { now, leaseMs }: { now: string; leaseMs: number }, said: { public_url: string; internal_url: string; free_slots?: number }): Promise<{ now: string; due: WorkDue } | undefined> {
    const row = await this.leaseDb
      .updateTable("runners")
      .set({ lease_expires_at: this.#at(now, leaseMs), ...said })
      .where("id", "=", id)
      .where("lease_expires_at", ">", this.#at(now))
      .returning((eb) => [this.#at(now).as("now"), ...workDueColumns(eb, this.#at(now))])
      .executeTakeFirst();
    return row && { now: row.now, due: toWorkDue(row) };
  }

  /** Now by the clock that judges leases (on PostgreSQL the database's), read on the lease connection. */
  async now(now: string): Promise<string> {
    const row = await this.leaseDb.selectNoFrom(this.#at(now).as("now")).executeTakeFirstOrThrow();
    return row.now;
  }

  /** Where the other coordinators reach a runner whose lease holds at `now`, if it said. */
  async internalUrl(id: string, now: string): Promise<string | undefined> {
    const row = await this.q.db.selectFrom("runners").select("internal_url").where("id", "=", id).where("lease_expires_at", ">", this.#at(now)).executeTakeFirst();
    return row?.internal_url ?? undefined;
  }

  /** Whether the runner's lease holds at `now`. */
  async isLive(id: string, now: string): Promise<boolean> {
    const row = await this.q.db.selectFrom("runners").select("id").where("id", "=", id).where("lease_expires_at", ">", this.#at(now)).executeTakeFirst();
    return row !== undefined;
  }

  list(): Promise<RunnerRecord[]> {
    return this.q.db.selectFrom("runners").selectAll().execute();
  }

  /** Ends a runner's lease now (it stopped, gave its lease up, or its process is gone); on the lease connection. */
  async expire(id: string, now: string): Promise<void> {
    await this.leaseDb.updateTable("runners").set({ lease_expires_at: this.#at(now) }).where("id", "=", id).where("lease_expires_at", ">", this.#at(now)).execute();
  }

  async remove(id: string): Promise<void> {
    await this.q.db.deleteFrom("runners").where("id", "=", id).execute();
  }

  /** Forgets runners whose lease expired before `now` and that hold no action any more. */
  async removeExpired(now: string): Promise<void> {
    await this.q.db
      .deleteFrom("runners")
      .where("lease_expires_at", "<=", this.#at(now))
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom("actions")
              .select("actions.id")
              .whereRef("actions.runner_id", "=", "runners.id")
              .where("actions.status", "in", ["running", "needs_input"]),
          ),
        ),
      )
      .execute();
  }
}
