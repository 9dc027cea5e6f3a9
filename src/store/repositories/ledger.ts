import type { LedgerKind } from "../../domain/credits.js";
import type { Queries } from "../queries.js";
import type { LedgerEntry } from "../records.js";

/** Credit ledger: every balance change is one row, written with the balance in one statement pair. */
export class LedgerRepository {
  constructor(private readonly q: Queries) {}

  /**
   * Moves the balance and adds the row (call inside a transaction), unless the balance would go
   * below zero: then nothing is written and it returns false. The balance moves in one conditional
   * statement, so concurrent holds in one workspace never abort each other (PostgreSQL, READ
   * COMMITTED: the second waits for the first's row lock and judges the balance it left) and never
   * spend a credit twice.
   */
  async append(entry: { workspace_id: string; kind: LedgerKind; amount: number; action_id?: string | undefined; reference?: string | undefined; created_at: string }): Promise<boolean> {
    const moved = await this.q.db
      .updateTable("workspaces")
      .set((eb) => ({ balance: eb("balance", "+", entry.amount) }))
      .where("id", "=", entry.workspace_id)
      .where((eb) => eb(eb("balance", "+", entry.amount), ">=", 0))
      .executeTakeFirst();
    if (moved.numUpdatedRows !== 1n) return false;
    await this.q.db
      .insertInto("credit_ledger")
      .values({ ...entry, action_id: entry.action_id ?? null, reference: entry.reference ?? null })
      .execute();
    return true;
  }

  async balance(workspaceId: string): Promise<number> {
    const row = await this.q.db.selectFrom("workspaces").select("balance").where("id", "=", workspaceId).executeTakeFirst();
    return row?.balance as number;
  }

  async sum(workspaceId: string): Promise<number> {
    const row = await this.q.db
      .selectFrom("credit_ledger")
      // Cast: a sum is bigint or numeric on PostgreSQL whatever the column; bigint comes back a number (an integer on SQLite).
      .select((eb) => eb.cast<number>(eb.fn.coalesce(eb.fn.sum("amount"), eb.lit(0)), "bigint").as("total"))
      .where("workspace_id", "=", workspaceId)
      .executeTakeFirst();
    return Number(row?.total ?? 0);
  }

  async entries(workspaceId: string): Promise<LedgerEntry[]> {
    const rows = await this.q.db.selectFrom("credit_ledger").selectAll().where("workspace_id", "=", workspaceId).orderBy("seq").execute();
    return rows.map(toEntry);
  }

  /** Newest first: up to `limit` entries older than `beforeSeq` (from the newest when absent). */
  async newest(workspaceId: string, limit: number, beforeSeq?: number): Promise<LedgerEntry[]> {
    let query = this.q.db.selectFrom("credit_ledger").selectAll().where("workspace_id", "=", workspaceId);
    if (beforeSeq !== undefined) query = query.where("seq", "<", beforeSeq);
    const rows = await query.orderBy("seq", "desc").limit(limit).execute();
    return rows.map(toEntry);
  }

  async hasReference(reference: string): Promise<boolean> {
    const row = await this.q.db.selectFrom("credit_ledger").select("seq").where("reference", "=", reference).executeTakeFirst();
    return row !== undefined;
  }
}

function toEntry(row: { seq: number; workspace_id: string; kind: string; amount: number; action_id: string | null; reference: string | null; created_at: string }): LedgerEntry {
  return { ...row, kind: row.kind as LedgerEntry["kind"], action_id: row.action_id ?? undefined, reference: row.reference ?? undefined };
}
