import type { ExpressionBuilder, Expression, SqlBool } from "kysely";
import type { Queries } from "../queries.js";
import type { Schema } from "../schema.js";

/**
 * Whether the account `accountRef` names has a live hold at `leaseNow`: one not expired whose
 * runner's lease holds. A hold whose runner died is no hold (DESIGN §11).
 */
export function liveHoldOn<DB extends Schema, TB extends keyof DB>(eb: ExpressionBuilder<DB, TB>, accountRef: Expression<string>, leaseNow: string): Expression<SqlBool> {
  const own = eb as unknown as ExpressionBuilder<Schema, never>;
  return own.exists(
    own
      .selectFrom("account_holds as h")
      .select("h.account_id")
      .where("h.account_id", "=", accountRef)
      .where("h.expires_at", ">", leaseNow)
      .where("h.runner_id", "in", own.selectFrom("runners").select("runners.id").where("runners.lease_expires_at", ">", leaseNow)),
  );
}

/**
 * Owner sign-in holds on accounts (DESIGN §3, §11): a sign-in page has the account's browser
 * context to itself, so no coordinator claims the account's actions while its hold is live. Times
 * are the lease clock's, as runners' leases are judged (PostgreSQL's clock once leases are).
 */
export class AccountHoldRepository {
  constructor(private readonly q: Queries) {}

  /**
   * Keeps claims of the account's actions out until this transaction ends (PostgreSQL: the
   * account's row `FOR UPDATE`, which a claim's `lockForClaim` waits for). SQLite's single writer
   * needs no lock.
   */
  async lockAgainstClaims(accountId: string): Promise<void> {
    if (this.q.adapter.dialect !== "postgres") return;
    await this.q.db.selectFrom("accounts").select("id").where("id", "=", accountId).forUpdate().execute();
  }

  /**
   * Inside a claim, before an action of the account is taken: waits for a hold being taken on it to
   * commit, so the take's own check sees it (PostgreSQL: `FOR KEY SHARE`, which an account's status
   * updates do not wait for).
   */
  async lockForClaim(accountId: string): Promise<void> {
    if (this.q.adapter.dialect !== "postgres") return;
    await this.q.db.selectFrom("accounts").select("id").where("id", "=", accountId).forKeyShare().execute();
  }

  /** Holds the account for `runnerId` until `expiresAt`, unless another live hold has it; true when held. */
  async take(hold: { account_id: string; runner_id: string; expires_at: string; created_at: string }, leaseNow: string): Promise<boolean> {
    const row = await this.q.db
      .insertInto("account_holds")
      .values(hold)
      .onConflict((oc) =>
        oc
          .column("account_id")
          .doUpdateSet((eb) => ({ runner_id: eb.ref("excluded.runner_id"), expires_at: eb.ref("excluded.expires_at"), created_at: eb.ref("excluded.created_at") }))
          .where((eb) => eb.not(liveHoldOn(eb, eb.ref("account_holds.account_id"), leaseNow))),
      )
      .returning("account_id")
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Gives up `runnerId`'s hold on the account (another's is left alone). */
  async release(accountId: string, runnerId: string): Promise<void> {
    await this.q.db.deleteFrom("account_holds").where("account_id", "=", accountId).where("runner_id", "=", runnerId).execute();
  }

  /** The runner whose live hold has the account at `leaseNow`, if any. */
  async holder(accountId: string, leaseNow: string): Promise<string | undefined> {
    const row = await this.q.db
      .selectFrom("account_holds as a")
      .select("a.runner_id")
      .where("a.account_id", "=", accountId)
      .where((eb) => liveHoldOn(eb, eb.ref("a.account_id"), leaseNow))
      .executeTakeFirst();
    return row?.runner_id;
  }
}
