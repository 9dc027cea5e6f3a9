import type { Queries } from "../queries.js";

/** A process that runs actions, and until when its lease holds. */
export interface RunnerRecord {
  id: string;
  kind: string;
  host: string;
  pid: number;
  public_url: string | null;
  /** Where the other coordinators reach it (DESIGN §11): a live view of a page it holds is proxied there. */
  internal_url: string | null;
  started_at: string;
  lease_expires_at: string;
}

/** Runners and their leases (DESIGN §11). */
export class RunnerRepository {
  constructor(private readonly q: Queries) {}

  async register(runner: RunnerRecord): Promise<void> {
    await this.q.db.insertInto("runners").values(runner).execute();
  }

  /**
   * Extends a runner's lease while it still holds; false once it has expired (others may
   * already have recovered its actions: it must give them up, not renew its claim on them).
   */
  async renew(id: string, now: string, leaseExpiresAt: string, urls: { public_url: string; internal_url: string }): Promise<boolean> {
    const { numUpdatedRows } = await this.q.db
      .updateTable("runners")
      .set({ lease_expires_at: leaseExpiresAt, ...urls })
      .where("id", "=", id)
      .where("lease_expires_at", ">", now)
      .executeTakeFirst();
    return numUpdatedRows === 1n;
  }

  /** Where the other coordinators reach a runner whose lease holds at `now`, if it said. */
  async internalUrl(id: string, now: string): Promise<string | undefined> {
    const row = await this.q.db.selectFrom("runners").select("internal_url").where("id", "=", id).where("lease_expires_at", ">", now).executeTakeFirst();
    return row?.internal_url ?? undefined;
  }

  /** Whether the runner's lease holds at `now`. */
  async isLive(id: string, now: string): Promise<boolean> {
    const row = await this.q.db.selectFrom("runners").select("id").where("id", "=", id).where("lease_expires_at", ">", now).executeTakeFirst();
    return row !== undefined;
  }

  list(): Promise<RunnerRecord[]> {
    return this.q.db.selectFrom("runners").selectAll().execute();
  }

  /** Ends a runner's lease now (it stopped, or its process is gone). */
  async expire(id: string, now: string): Promise<void> {
    await this.q.db.updateTable("runners").set({ lease_expires_at: now }).where("id", "=", id).where("lease_expires_at", ">", now).execute();
  }

  async remove(id: string): Promise<void> {
    await this.q.db.deleteFrom("runners").where("id", "=", id).execute();
  }

  /** Forgets runners whose lease expired before `now` and that hold no action any more. */
  async removeExpired(now: string): Promise<void> {
    await this.q.db
      .deleteFrom("runners")
      .where("lease_expires_at", "<=", now)
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
