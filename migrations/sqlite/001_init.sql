-- Workspaces own keys, accounts, actions and credits.
CREATE TABLE workspaces (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE,
  balance     INTEGER NOT NULL DEFAULT 0 CHECK (balance >= 0),
  created_at  TEXT NOT NULL
);

-- Only a SHA-256 hash of each key is kept.
CREATE TABLE api_keys (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  key_hash     TEXT NOT NULL UNIQUE,
  prefix       TEXT NOT NULL,
  role         TEXT NOT NULL CHECK (role IN ('admin', 'operator', 'read_only')),
  account_ids  TEXT,            -- JSON array, NULL = every account
  created_at   TEXT NOT NULL,
  revoked_at   TEXT
);

-- Secrets are AES-256-GCM sealed under the master key.
CREATE TABLE accounts (
  id               TEXT PRIMARY KEY,
  workspace_id     TEXT NOT NULL REFERENCES workspaces(id),
  platform         TEXT NOT NULL,
  username         TEXT NOT NULL,
  password_sealed  BLOB,
  totp_sealed      BLOB,
  session_sealed   BLOB,
  status           TEXT NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'connected', 'signed_out')),
  profile          TEXT,        -- JSON {handle, name}
  last_totp_step   INTEGER,     -- the last TOTP time step submitted, never reused
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL,
  deleted_at       TEXT
);
CREATE INDEX accounts_workspace ON accounts(workspace_id, deleted_at);

CREATE TABLE actions (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,
  id            TEXT NOT NULL UNIQUE,
  workspace_id  TEXT NOT NULL REFERENCES workspaces(id),
  account_id    TEXT NOT NULL REFERENCES accounts(id),
  platform      TEXT NOT NULL,
  type          TEXT NOT NULL,
  params        TEXT NOT NULL,  -- JSON
  status        TEXT NOT NULL CHECK (status IN ('queued', 'running', 'needs_input', 'succeeded', 'failed', 'canceled')),
  error_code    TEXT,
  error_message TEXT,
  result        TEXT,           -- JSON
  price         INTEGER NOT NULL,
  cost          INTEGER NOT NULL DEFAULT 0,
  held          INTEGER NOT NULL DEFAULT 0 CHECK (held IN (0, 1)),
  runner_id     TEXT,
  created_at    TEXT NOT NULL,
  updated_at    TEXT NOT NULL,
  finished_at   TEXT
);
CREATE INDEX actions_workspace ON actions(workspace_id, seq);
CREATE INDEX actions_account_status ON actions(account_id, status);
CREATE INDEX actions_status ON actions(status);

-- One open challenge per action at most; the live-link token is kept hashed (for look-up)
-- and sealed (so the action JSON can show sign_in_url again).
CREATE TABLE challenges (
  id               TEXT PRIMARY KEY,
  action_id        TEXT NOT NULL REFERENCES actions(id),
  kind             TEXT NOT NULL,
  message          TEXT NOT NULL,
  expires_at       TEXT NOT NULL,
  link_hash        TEXT NOT NULL UNIQUE,
  link_sealed      BLOB NOT NULL,
  link_expires_at  TEXT NOT NULL,
  refusals         INTEGER NOT NULL DEFAULT 0,
  state            TEXT NOT NULL CHECK (state IN ('open', 'answered', 'resolved', 'expired', 'canceled', 'failed')),
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL
);
CREATE INDEX challenges_action ON challenges(action_id, state);
CREATE INDEX challenges_open_deadline ON challenges(state, expires_at);

-- Every balance change is a row; rows of a workspace sum to its balance.
CREATE TABLE credit_ledger (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  kind         TEXT NOT NULL CHECK (kind IN ('grant', 'top_up', 'hold', 'release')),
  amount       INTEGER NOT NULL,
  action_id    TEXT REFERENCES actions(id),
  reference    TEXT UNIQUE,     -- e.g. a payment's transaction: credited at most once
  created_at   TEXT NOT NULL
);
CREATE INDEX credit_ledger_workspace ON credit_ledger(workspace_id);

CREATE TABLE idempotency_keys (
  workspace_id    TEXT NOT NULL REFERENCES workspaces(id),
  key             TEXT NOT NULL,
  request_hash    TEXT NOT NULL,
  state           TEXT NOT NULL CHECK (state IN ('in_flight', 'done')),
  action_id       TEXT REFERENCES actions(id),
  response_status INTEGER,
  response_body   TEXT,
  created_at      TEXT NOT NULL,
  expires_at      TEXT NOT NULL,
  PRIMARY KEY (workspace_id, key)
);
CREATE INDEX idempotency_action ON idempotency_keys(action_id);
