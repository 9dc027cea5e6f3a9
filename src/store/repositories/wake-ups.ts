import { sql } from "kysely";
import { CHANGES_CHANNEL, QUEUED_SUBJECT } from "../change-feed.js";
import type { Queries } from "../queries.js";

/**
 * Wake-ups a writer sends itself, beside those the triggers send (migrations/postgres): in the
 * triggers' payload shape, `<subject>|<application_name>`, so followers read its origin alike.
 * PostgreSQL only: on one machine (SQLite) every follower reads at every commit anyway.
 */
export class WakeUpRepository {
  constructor(private readonly q: Queries) {}

  /**
   * Queued work its writer could not take (no free run slot, or no runner here): the coordinators
   * that have a free slot claim then, instead of at their next heartbeat. Inside a transaction, sent
   * at its commit (and not at all if it rolls back).
   */
  async wakeClaimers(): Promise<void> {
    if (this.q.adapter.dialect !== "postgres") return;
    await sql`SELECT pg_notify(${CHANGES_CHANNEL}, ${QUEUED_SUBJECT} || '|' || coalesce(current_setting('application_name', true), ''))`.execute(this.q.db);
  }
}
