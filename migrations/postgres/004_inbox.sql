-- The inbox (DESIGN §15): each account's e-mail address and SMS URL, looked up by the hash of
-- their token and sealed to be shown again; the messages they received, sealed, kept 24 hours.
CREATE TABLE inboxes (
  account_id    text PRIMARY KEY REFERENCES accounts(id),
  email_hash    text NOT NULL UNIQUE,
  email_sealed  bytea NOT NULL,
  sms_hash      text NOT NULL UNIQUE,
  sms_sealed    bytea NOT NULL,
  created_at    text NOT NULL
);

CREATE TABLE inbox_messages (
  id            text PRIMARY KEY,
  account_id    text NOT NULL REFERENCES accounts(id),
  channel       text NOT NULL CHECK (channel IN ('email', 'sms')),
  -- How it came: the SMTP listener, the SMS URL, or pushed through the API or MCP.
  source        text NOT NULL CHECK (source IN ('smtp', 'sms_url', 'pushed')),
  from_sealed   bytea,
  body_sealed   bytea NOT NULL,
  received_at   text NOT NULL,
  -- The action whose challenge it answered; a message answers at most one.
  used_for      text,
  expires_at    text NOT NULL
);
CREATE INDEX inbox_messages_account ON inbox_messages (account_id, channel, received_at);
CREATE INDEX inbox_messages_expires ON inbox_messages (expires_at);

-- Who gave a challenge's latest answer (inbox, totp, person, agent), on the challenge (its
-- refusal rule) and on the action (shown as `answered_by`). `inbox_after`: the inbox answers this
-- challenge only with messages received after it (its start less ten minutes, then each refused inbox code).
ALTER TABLE challenges ADD COLUMN answered_by text;
ALTER TABLE challenges ADD COLUMN inbox_after text;
ALTER TABLE actions ADD COLUMN answered_by text;
