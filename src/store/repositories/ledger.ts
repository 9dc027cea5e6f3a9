import type { Db } from "../database.js";
import type { LedgerEntry } from "../records.js";
import type { LedgerKind } from "../../domain/credits.js";

/** Credit ledger: every balance change is one row, written with the balance in one statement pair. */
export class LedgerRepository {
  constructor(private readonly db: Db) {}

  /** Adds a row and moves the balance; the CHECK on `workspaces.balance` refuses going below zero. */
  append(entry: { workspace_id: string; kind: LedgerKind; amount: number; action_id?: string | undefined; reference?: string | undefined; created_at: string }): void {
    this.db
      .prepare(
        `INSERT INTO credit_ledger (workspace_id, kind, amount, action_id, reference, created_at)
         VALUES (@workspace_id, @kind, @amount, @action_id, @reference, @created_at)`,
      )
      .run({ ...entry, action_id: entry.action_id ?? null, reference: entry.reference ?? null });
    this.db.prepare("UPDATE workspaces SET balance = balance + ? WHERE id = ?").run(entry.amount, entry.workspace_id);
  }

  balance(workspaceId: string): number {
    return this.db.prepare("SELECT balance FROM workspaces WHERE id = ?").pluck().get(workspaceId) as number;
  }

  sum(workspaceId: string): number {
    return this.db.prepare("SELECT coalesce(sum(amount), 0) FROM credit_ledger WHERE workspace_id = ?").pluck().get(workspaceId) as number;
  }

  entries(workspaceId: string): LedgerEntry[] {
    return (this.db.prepare("SELECT * FROM credit_ledger WHERE workspace_id = ? ORDER BY seq").all(workspaceId) as LedgerEntry[]).map(toEntry);
  }

  /** Newest first: up to `limit` entries older than `beforeSeq` (from the newest when absent). */
  newest(workspaceId: string, limit: number, beforeSeq?: number): LedgerEntry[] {
    return (
      this.db
        .prepare("SELECT * FROM credit_ledger WHERE workspace_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?")
        .all(workspaceId, beforeSeq ?? Number.MAX_SAFE_INTEGER, limit) as LedgerEntry[]
    ).map(toEntry);
  }

  hasReference(reference: string): boolean {
    return this.db.prepare("SELECT 1 FROM credit_ledger WHERE reference = ?").get(reference) !== undefined;
  }
}

function toEntry(row: LedgerEntry): LedgerEntry {
  return { ...row, action_id: row.action_id ?? undefined, reference: row.reference ?? undefined };
}
