-- pragma: foreign_keys off
-- Managed accounts (DESIGN §16). The account's status gains `needs_auth` (was `signed_out`) and
-- `blocked`; SQLite cannot change a CHECK, so the table is made again (its rowid kept: accounts
-- are listed in rowid order), with foreign keys off for this migration alone and checked after.
CREATE TABLE accounts_new (
  id               TEXT PRIMARY KEY,
  workspace_id     TEXT NOT NULL REFERENCES workspaces(id),
  platform         TEXT NOT NULL,
  username         TEXT NOT NULL,
  password_sealed  BLOB,
  totp_sealed      BLOB,
  session_sealed   BLOB,
  status           TEXT NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'connected', 'needs_auth', 'blocked')),
  -- Why it has that status, in the platform's or the service's words; NULL when connected.
  status_reason    TEXT,
  -- The last time a check or an action found out whether the session is signed in.
  checked_at       TEXT,
  -- When its next health check is due (spread over the interval, later after failed checks).
  next_check_at    TEXT,
  check_failures   INTEGER NOT NULL DEFAULT 0,
  -- JSON {type: {per_hour?, per_day?, min_gap_seconds?}}: overrides of the driver's paces.
  pace             TEXT,
  profile          TEXT,        -- JSON {handle, name}
  last_totp_step   INTEGER,     -- the last TOTP time step submitted, never reused
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL,
  deleted_at       TEXT
);
INSERT INTO accounts_new (rowid, id, workspace_id, platform, username, password_sealed, totp_sealed, session_sealed, status, profile, last_totp_step, created_at, updated_at, deleted_at)
  SELECT rowid, id, workspace_id, platform, username, password_sealed, totp_sealed, session_sealed,
         CASE status WHEN 'signed_out' THEN 'needs_auth' ELSE status END,
         profile, last_totp_step, created_at, updated_at, deleted_at
  FROM accounts;
DROP TABLE accounts;
ALTER TABLE accounts_new RENAME TO accounts;
CREATE INDEX accounts_workspace ON accounts(workspace_id, deleted_at);
CREATE INDEX accounts_next_check ON accounts(next_check_at) WHERE deleted_at IS NULL;

-- Pacing: when a queued action may run at the earliest, and when each run first started (rolling
-- hour and day counts per account and type).
ALTER TABLE actions ADD COLUMN not_before TEXT;
ALTER TABLE actions ADD COLUMN started_at TEXT;
CREATE INDEX actions_account_started ON actions(account_id, type, started_at);

-- A platform's "slow down" (rate_limited): the account's actions of that type wait until `until`;
-- `strikes` doubles the next wait (15 min up to 24 h); a success ends it.
CREATE TABLE pace_cooldowns (
  account_id  TEXT NOT NULL REFERENCES accounts(id),
  type        TEXT NOT NULL,
  until       TEXT NOT NULL,
  strikes     INTEGER NOT NULL,
  PRIMARY KEY (account_id, type)
);
