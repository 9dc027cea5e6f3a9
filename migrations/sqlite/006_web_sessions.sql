-- Web app sessions (DESIGN §12): the cookie holds a random token, the store only its hash,
-- bound to the API key it was opened with (revoking the key ends its sessions).
CREATE TABLE web_sessions (
  token_hash    TEXT PRIMARY KEY,
  key_id        TEXT NOT NULL REFERENCES api_keys(id),
  created_at    TEXT NOT NULL,
  last_seen_at  TEXT NOT NULL,
  expires_at    TEXT NOT NULL
);
CREATE INDEX web_sessions_key ON web_sessions(key_id);
CREATE INDEX web_sessions_expiry ON web_sessions(expires_at);
