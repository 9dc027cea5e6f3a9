import { sql, type ExpressionBuilder } from "kysely";
import type { Sealer } from "../crypto.js";
import type { Queries } from "../queries.js";
import type { AccountRecord, AccountStatus } from "../records.js";
import { orUndefined } from "../records.js";
import type { Schema } from "../schema.js";
import type { Paces } from "../../domain/pace.js";

interface AccountRow {
  id: string;
  workspace_id: string;
  platform: string;
  username: string;
  has_password: number;
  has_totp_secret: number;
  has_session: number;
  status: string;
  status_reason: string | null;
  checked_at: string | null;
  profile: string | null;
  last_totp_step: number | null;
  pace: string | null;
  created_at: string;
  updated_at: string;
}

/**
 * Whether a sealed column holds a value: 1 or 0 from either database (literals, not parameters,
 * so PostgreSQL types the CASE as an integer). The secret itself is never read here.
 */
const held = (eb: ExpressionBuilder<Schema, "accounts">, column: "password_sealed" | "totp_sealed" | "session_sealed") =>
  eb.case().when(column, "is", null).then(eb.lit(0)).else(eb.lit(1)).end();

const COLUMNS = (eb: ExpressionBuilder<Schema, "accounts">) =>
  [
    "id",
    "workspace_id",
    "platform",
    "username",
    held(eb, "password_sealed").as("has_password"),
    held(eb, "totp_sealed").as("has_totp_secret"),
    held(eb, "session_sealed").as("has_session"),
    "status",
    "status_reason",
    "checked_at",
    "profile",
    "last_totp_step",
    "pace",
    "created_at",
    "updated_at",
  ] as const;

function toAccount(row: AccountRow): AccountRecord {
  const profile = orUndefined(row.profile);
  return {
    ...row,
    status: row.status as AccountStatus,
    status_reason: orUndefined(row.status_reason),
    checked_at: orUndefined(row.checked_at),
    has_password: row.has_password === 1,
    has_totp_secret: row.has_totp_secret === 1,
    has_session: row.has_session === 1,
    profile: profile === undefined ? undefined : (JSON.parse(profile) as AccountRecord["profile"]),
    last_totp_step: orUndefined(row.last_totp_step),
    pace: row.pace === null ? {} : (JSON.parse(row.pace) as Paces),
  };
}

/** The sealed secret columns and what each holds. */
export type AccountSecret = "password" | "totp_secret" | "session";
const SECRET_COLUMN = {
  password: "password_sealed",
  totp_secret: "totp_sealed",
  session: "session_sealed",
} as const satisfies Record<AccountSecret, string>;

/** What `update` may change; `null` clears a column. */
export interface AccountChanges {
  username?: string;
  status?: AccountStatus;
  status_reason?: string | null;
  checked_at?: string;
  next_check_at?: string | null;
  check_failures?: number;
  profile?: AccountRecord["profile"];
  last_totp_step?: number;
  /** Its pace overrides; `{}` clears them. */
  pace?: Paces;
}

export class AccountRepository {
  constructor(
    private readonly q: Queries,
    private readonly sealer: Sealer,
  ) {}

  async insert(account: { id: string; workspace_id: string; platform: string; username: string; created_at: string }): Promise<void> {
    await this.q.db
      .insertInto("accounts")
      .values({ ...account, updated_at: account.created_at })
      .execute();
  }

  async get(id: string): Promise<AccountRecord | undefined> {
    const row = await this.q.db.selectFrom("accounts").select(COLUMNS).where("id", "=", id).where("deleted_at", "is", null).executeTakeFirst();
    return row && toAccount(row);
  }

  /**
   * The account, its row locked until the transaction ends (PostgreSQL: `FOR NO KEY UPDATE`): what
   * the transaction then writes from what it read (a status compared, a failure counted, a session
   * kept) cannot interleave with another writer of the account, nor land on an account deleted
   * meanwhile. SQLite's single writer is the lock already.
   */
  async lockForWrite(id: string): Promise<AccountRecord | undefined> {
    if (this.q.adapter.dialect !== "postgres") return this.get(id);
    const row = await this.q.db.selectFrom("accounts").select(COLUMNS).where("id", "=", id).where("deleted_at", "is", null).forNoKeyUpdate().executeTakeFirst();
    return row && toAccount(row);
  }

  /**
   * In the order they were added: by `created_at`, then `rowid` (SQLite's own; on PostgreSQL an
   * identity column of that name, `migrations/postgres`), so accounts added in one millisecond
   * keep their order.
   */
  async list(workspaceId: string, allowed: readonly string[] | undefined): Promise<AccountRecord[]> {
    const rows = await this.q.db
      .selectFrom("accounts")
      .select(COLUMNS)
      .where("workspace_id", "=", workspaceId)
      .where("deleted_at", "is", null)
      .orderBy("created_at")
      .orderBy(sql`rowid`)
      .execute();
    return rows.map(toAccount).filter((account) => !allowed || allowed.includes(account.id));
  }

  async update(id: string, changes: AccountChanges, now: string): Promise<void> {
    await this.q.db
      .updateTable("accounts")
      .set({
        updated_at: now,
        ...(changes.username !== undefined ? { username: changes.username } : {}),
        ...(changes.status !== undefined ? { status: changes.status } : {}),
        ...(changes.status_reason !== undefined ? { status_reason: changes.status_reason } : {}),
        ...(changes.checked_at !== undefined ? { checked_at: changes.checked_at } : {}),
        ...(changes.next_check_at !== undefined ? { next_check_at: changes.next_check_at } : {}),
        ...(changes.check_failures !== undefined ? { check_failures: changes.check_failures } : {}),
        ...(changes.profile !== undefined ? { profile: changes.profile ? JSON.stringify(changes.profile) : null } : {}),
        ...(changes.last_totp_step !== undefined ? { last_totp_step: changes.last_totp_step } : {}),
        ...(changes.pace !== undefined ? { pace: Object.keys(changes.pace).length > 0 ? JSON.stringify(changes.pace) : null } : {}),
      })
      .where("id", "=", id)
      .execute();
  }

  /**
   * Connected accounts whose session nobody has found out about since `checkedBefore` (neither a
   * check nor an action), whose backed-off next check is due by `now`, and that nothing is queued,
   * running or waiting on: the longest unchecked first (DESIGN §16 health checks).
   */
  async dueForCheck(checkedBefore: string, now: string, limit: number): Promise<AccountRecord[]> {
    const rows = await this.q.db
      .selectFrom("accounts")
      .select(COLUMNS)
      .where("deleted_at", "is", null)
      .where("status", "=", "connected")
      .where((eb) => eb(eb.fn.coalesce("checked_at", "updated_at"), "<", checkedBefore))
      .where((eb) => eb.or([eb("next_check_at", "is", null), eb("next_check_at", "<=", now)]))
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom("actions")
              .select("actions.id")
              .whereRef("actions.account_id", "=", "accounts.id")
              .where("actions.status", "in", ["queued", "running", "needs_input"]),
          ),
        ),
      )
      .orderBy((eb) => eb.fn.coalesce("checked_at", "updated_at"))
      .limit(limit)
      .execute();
    return rows.map(toAccount);
  }

  async countConnected(): Promise<number> {
    const row = await this.q.db
      .selectFrom("accounts")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("deleted_at", "is", null)
      .where("status", "=", "connected")
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * Takes the account's due check for this coordinator: sets when the next one is due, only if the
   * current one still is (coordinators scheduling at once: one of them gets it). True when taken.
   */
  async takeCheck(id: string, now: string, next: string): Promise<boolean> {
    const result = await this.q.db
      .updateTable("accounts")
      .set({ next_check_at: next })
      .where("id", "=", id)
      .where((eb) => eb.or([eb("next_check_at", "is", null), eb("next_check_at", "<=", now)]))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /** How many checks in a row failed to find out (the platform or browser did not answer). */
  async checkFailures(id: string): Promise<number> {
    const row = await this.q.db.selectFrom("accounts").select("check_failures").where("id", "=", id).executeTakeFirst();
    return row?.check_failures ?? 0;
  }

  /** Seals and stores a secret; `undefined` removes it. */
  async setSecret(id: string, secret: AccountSecret, value: string | undefined, now: string): Promise<void> {
    const sealed = value === undefined ? null : this.sealer.seal(value, `account:${id}:${secret}`);
    await this.q.db
      .updateTable("accounts")
      .set({ [SECRET_COLUMN[secret]]: sealed, updated_at: now })
      .where("id", "=", id)
      .execute();
  }

  async getSecret(id: string, secret: AccountSecret): Promise<string | undefined> {
    const column = SECRET_COLUMN[secret];
    const row = await this.q.db.selectFrom("accounts").select(column).where("id", "=", id).executeTakeFirst();
    return this.#open(id, secret, row?.[column]);
  }

  /**
   * The account (as `get`) with every secret of it, in one statement: a run reads them all as it
   * starts. Secrets not stored are undefined; an account deleted or never there is undefined.
   */
  async getWithSecrets(id: string): Promise<{ account: AccountRecord; secrets: Record<AccountSecret, string | undefined> } | undefined> {
    const row = await this.q.db
      .selectFrom("accounts")
      .select((eb) => [...COLUMNS(eb), "password_sealed", "totp_sealed", "session_sealed"])
      .where("id", "=", id)
      .where("deleted_at", "is", null)
      .executeTakeFirst();
    if (!row) return undefined;
    const { password_sealed, totp_sealed, session_sealed, ...account } = row;
    return {
      account: toAccount(account),
      secrets: {
        password: this.#open(id, "password", password_sealed),
        totp_secret: this.#open(id, "totp_secret", totp_sealed),
        session: this.#open(id, "session", session_sealed),
      },
    };
  }

  /** A secret as `setSecret` sealed it (bound to its account and kind); none stored: undefined. */
  #open(id: string, secret: AccountSecret, sealed: Buffer | null | undefined): string | undefined {
    return sealed ? this.sealer.open(sealed, `account:${id}:${secret}`) : undefined;
  }

  /** Wipes credentials and browser state; the row stays for the actions that name it. */
  async softDelete(id: string, now: string): Promise<void> {
    await this.q.db
      .updateTable("accounts")
      .set({ password_sealed: null, totp_sealed: null, session_sealed: null, deleted_at: now, updated_at: now })
      .where("id", "=", id)
      .execute();
  }
}
