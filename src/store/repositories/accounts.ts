import type { Db } from "../database.js";
import type { Sealer } from "../crypto.js";
import type { AccountRecord, AccountStatus } from "../records.js";
import { orUndefined } from "../records.js";

interface AccountRow {
  id: string;
  workspace_id: string;
  platform: string;
  username: string;
  has_password: number;
  has_totp_secret: number;
  has_session: number;
  status: AccountStatus;
  profile: string | null;
  last_totp_step: number | null;
  created_at: string;
  updated_at: string;
}

const COLUMNS = `id, workspace_id, platform, username, password_sealed IS NOT NULL AS has_password,
  totp_sealed IS NOT NULL AS has_totp_secret, session_sealed IS NOT NULL AS has_session,
  status, profile, last_totp_step, created_at, updated_at`;

function toAccount(row: AccountRow): AccountRecord {
  const profile = orUndefined(row.profile);
  return {
    ...row,
    has_password: row.has_password === 1,
    has_totp_secret: row.has_totp_secret === 1,
    has_session: row.has_session === 1,
    profile: profile === undefined ? undefined : (JSON.parse(profile) as AccountRecord["profile"]),
    last_totp_step: orUndefined(row.last_totp_step),
  };
}

/** The sealed secret columns and what each holds. */
export type AccountSecret = "password" | "totp_secret" | "session";
const SECRET_COLUMN: Record<AccountSecret, string> = {
  password: "password_sealed",
  totp_secret: "totp_sealed",
  session: "session_sealed",
};

export class AccountRepository {
  constructor(
    private readonly db: Db,
    private readonly sealer: Sealer,
  ) {}

  insert(account: { id: string; workspace_id: string; platform: string; username: string; created_at: string }): void {
    this.db
      .prepare(
        `INSERT INTO accounts (id, workspace_id, platform, username, created_at, updated_at)
         VALUES (@id, @workspace_id, @platform, @username, @created_at, @created_at)`,
      )
      .run(account);
  }

  get(id: string): AccountRecord | undefined {
    const row = this.db.prepare(`SELECT ${COLUMNS} FROM accounts WHERE id = ? AND deleted_at IS NULL`).get(id) as AccountRow | undefined;
    return row && toAccount(row);
  }

  list(workspaceId: string, allowed: readonly string[] | undefined): AccountRecord[] {
    const rows = this.db
      .prepare(`SELECT ${COLUMNS} FROM accounts WHERE workspace_id = ? AND deleted_at IS NULL ORDER BY created_at, rowid`)
      .all(workspaceId) as AccountRow[];
    return rows.map(toAccount).filter((account) => !allowed || allowed.includes(account.id));
  }

  update(id: string, changes: { username?: string; status?: AccountStatus; profile?: AccountRecord["profile"]; last_totp_step?: number }, now: string): void {
    const sets = ["updated_at = @now"];
    if (changes.username !== undefined) sets.push("username = @username");
    if (changes.status !== undefined) sets.push("status = @status");
    if (changes.profile !== undefined) sets.push("profile = @profile");
    if (changes.last_totp_step !== undefined) sets.push("last_totp_step = @last_totp_step");
    this.db
      .prepare(`UPDATE accounts SET ${sets.join(", ")} WHERE id = @id`)
      .run({ ...changes, profile: changes.profile ? JSON.stringify(changes.profile) : null, id, now });
  }

  /** Seals and stores a secret; `undefined` removes it. */
  setSecret(id: string, secret: AccountSecret, value: string | undefined, now: string): void {
    const sealed = value === undefined ? null : this.sealer.seal(value, `account:${id}:${secret}`);
    this.db.prepare(`UPDATE accounts SET ${SECRET_COLUMN[secret]} = ?, updated_at = ? WHERE id = ?`).run(sealed, now, id);
  }

  getSecret(id: string, secret: AccountSecret): string | undefined {
    const sealed = this.db.prepare(`SELECT ${SECRET_COLUMN[secret]} FROM accounts WHERE id = ?`).pluck().get(id) as Buffer | null | undefined;
    return sealed ? this.sealer.open(sealed, `account:${id}:${secret}`) : undefined;
  }

  /** Wipes credentials and browser state; the row stays for the actions that name it. */
  softDelete(id: string, now: string): void {
    this.db
      .prepare(
        `UPDATE accounts SET password_sealed = NULL, totp_sealed = NULL, session_sealed = NULL,
         deleted_at = @now, updated_at = @now WHERE id = @id`,
      )
      .run({ id, now });
  }
}
