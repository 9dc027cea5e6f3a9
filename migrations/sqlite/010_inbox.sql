-- The inbox (DESIGN §15): each account's e-mail address and SMS URL, looked up by the hash of
-- their token and sealed to be shown again; the messages they received, sealed, kept 24 hours.
CREATE TABLE inboxes (
  account_id    TEXT PRIMARY KEY REFERENCES accounts(id),
  email_hash    TEXT NOT NULL UNIQUE,
  email_sealed  BLOB NOT NULL,
  sms_hash      TEXT NOT NULL UNIQUE,
  sms_sealed    BLOB NOT NULL,
  created_at    TEXT NOT NULL
);

CREATE TABLE inbox_messages (
  id            TEXT PRIMARY KEY,
  account_id    TEXT NOT NULL REFERENCES accounts(id),
  channel       TEXT NOT NULL CHECK (channel IN ('email', 'sms')),
  -- How it came: the SMTP listener, the SMS URL, or pushed through the API or MCP.
  source        TEXT NOT NULL CHECK (source IN ('smtp', 'sms_url', 'pushed')),
  from_sealed   BLOB,
  body_sealed   BLOB NOT NULL,
  received_at   TEXT NOT NULL,
  -- The action whose challenge it answered; a message answers at most one.
  used_for      TEXT,
  expires_at    TEXT NOT NULL
);
CREATE INDEX inbox_messages_account ON inbox_messages (account_id, channel, received_at);
CREATE INDEX inbox_messages_expires ON inbox_messages (expires_at);

-- Who gave a challenge's latest answer (inbox, totp, person, agent), on the challenge (its
-- refusal rule) and on the action (shown as `answered_by`). `inbox_after`: the inbox answers this
-- challenge only with messages received after it (its start less ten minutes, then each refused inbox code).
ALTER TABLE challenges ADD COLUMN answered_by TEXT;
ALTER TABLE challenges ADD COLUMN inbox_after TEXT;
ALTER TABLE actions ADD COLUMN answered_by TEXT;
