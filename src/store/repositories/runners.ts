import type { Db } from "../database.js";

/** A process that runs actions, and until when its lease holds. */
export interface RunnerRecord {
  id: string;
  kind: string;
  host: string;
  pid: number;
  public_url: string | null;
  started_at: string;
  lease_expires_at: string;
}

/** Runners and their leases (DESIGN §11). */
export class RunnerRepository {
  constructor(private readonly db: Db) {}

  register(runner: RunnerRecord): void {
    this.db
      .prepare(
        "INSERT INTO runners (id, kind, host, pid, public_url, started_at, lease_expires_at) VALUES (@id, @kind, @host, @pid, @public_url, @started_at, @lease_expires_at)",
      )
      .run(runner);
  }

  /**
   * Extends a runner's lease while it still holds; false once it has expired (others may
   * already have recovered its actions: it must give them up, not renew its claim on them).
   */
  renew(id: string, now: string, leaseExpiresAt: string, publicUrl: string): boolean {
    return (
      this.db.prepare("UPDATE runners SET lease_expires_at = ?, public_url = ? WHERE id = ? AND lease_expires_at > ?").run(leaseExpiresAt, publicUrl, id, now).changes === 1
    );
  }

  /** Where a runner serves its live links, if it said. */
  publicUrl(id: string): string | undefined {
    return (this.db.prepare("SELECT public_url FROM runners WHERE id = ?").pluck().get(id) as string | null | undefined) ?? undefined;
  }

  /** Whether the runner's lease holds at `now`. */
  isLive(id: string, now: string): boolean {
    return this.db.prepare("SELECT 1 FROM runners WHERE id = ? AND lease_expires_at > ?").get(id, now) !== undefined;
  }

  list(): RunnerRecord[] {
    return this.db.prepare("SELECT id, kind, host, pid, public_url, started_at, lease_expires_at FROM runners").all() as RunnerRecord[];
  }

  /** Ends a runner's lease now (it stopped, or its process is gone). */
  expire(id: string, now: string): void {
    this.db.prepare("UPDATE runners SET lease_expires_at = ? WHERE id = ? AND lease_expires_at > ?").run(now, id, now);
  }

  remove(id: string): void {
    this.db.prepare("DELETE FROM runners WHERE id = ?").run(id);
  }

  /** Forgets runners whose lease expired before `now` and that hold no action any more. */
  removeExpired(now: string): void {
    this.db
      .prepare(
        `DELETE FROM runners WHERE lease_expires_at <= ?
           AND NOT EXISTS (SELECT 1 FROM actions WHERE actions.runner_id = runners.id AND actions.status IN ('running', 'needs_input'))`,
      )
      .run(now);
  }
}
