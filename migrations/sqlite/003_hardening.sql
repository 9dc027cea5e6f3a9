-- Idempotency records name their action and are presented afresh on replay: a stored
-- response body could hold a live-link token in plain text, so none is kept.
UPDATE idempotency_keys SET response_body = NULL;
CREATE INDEX idempotency_expiry ON idempotency_keys(expires_at);

-- The commit point: set when the driver is about to do what cannot be undone (click Post,
-- Send). An action interrupted before it did nothing on the platform.
ALTER TABLE actions ADD COLUMN committed_at TEXT;

-- TOTP time steps are claimed per platform user, not per account row: the same person
-- connected twice (or in two workspaces) shares one authenticator and one step per window.
CREATE TABLE totp_steps (
  platform   TEXT NOT NULL,
  username   TEXT NOT NULL,   -- lower-cased
  last_step  INTEGER NOT NULL,
  PRIMARY KEY (platform, username)
);
INSERT INTO totp_steps (platform, username, last_step)
  SELECT platform, lower(username), max(last_totp_step) FROM accounts
  WHERE last_totp_step IS NOT NULL GROUP BY platform, lower(username);

-- Which key made an owner sign-in link: open sign-in pages are bounded per key.
ALTER TABLE sign_in_links ADD COLUMN key_id TEXT;
