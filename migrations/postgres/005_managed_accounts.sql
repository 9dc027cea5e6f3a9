-- Managed accounts (DESIGN §16): see migrations/sqlite/011_managed_accounts.sql.
ALTER TABLE accounts DROP CONSTRAINT accounts_status_check;
UPDATE accounts SET status = 'needs_auth' WHERE status = 'signed_out';
ALTER TABLE accounts ADD CONSTRAINT accounts_status_check CHECK (status IN ('new', 'connected', 'needs_auth', 'blocked'));
ALTER TABLE accounts ADD COLUMN status_reason text;
ALTER TABLE accounts ADD COLUMN checked_at text;
ALTER TABLE accounts ADD COLUMN next_check_at text;
ALTER TABLE accounts ADD COLUMN check_failures integer NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN pace text;
CREATE INDEX accounts_next_check ON accounts(next_check_at) WHERE deleted_at IS NULL;

ALTER TABLE actions ADD COLUMN not_before text;
ALTER TABLE actions ADD COLUMN started_at text;
CREATE INDEX actions_account_started ON actions(account_id, type, started_at);

CREATE TABLE pace_cooldowns (
  account_id  text NOT NULL REFERENCES accounts(id),
  type        text NOT NULL,
  until       text NOT NULL,
  strikes     integer NOT NULL,
  PRIMARY KEY (account_id, type)
);
