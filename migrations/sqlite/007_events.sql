-- Events and feedback (DESIGN §13).
-- The outbox: one row per action or account status change, written in the change's transaction.
-- `data` is the public object as it was then, without a challenge's sign_in_url (a capability:
-- it is rebuilt from the sealed challenge token when the event is sent).
CREATE TABLE events (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,
  id            TEXT NOT NULL UNIQUE,
  workspace_id  TEXT NOT NULL REFERENCES workspaces(id),
  type          TEXT NOT NULL CHECK (type IN ('action.updated', 'account.updated')),
  subject_id    TEXT NOT NULL,
  account_id    TEXT NOT NULL,
  challenge_id  TEXT,
  data          TEXT NOT NULL,
  created_at    TEXT NOT NULL
);
CREATE INDEX events_workspace ON events(workspace_id, seq);
CREATE INDEX events_created ON events(created_at);

CREATE TABLE webhook_endpoints (
  id              TEXT PRIMARY KEY,
  workspace_id    TEXT NOT NULL REFERENCES workspaces(id),
  url             TEXT NOT NULL,
  events          TEXT,            -- JSON array of event types, NULL = every type
  account_ids     TEXT,            -- the creating key's allow-list (JSON), NULL = every account
  secret_sealed   BLOB NOT NULL,
  failing_since   TEXT,
  disabled_at     TEXT,
  disabled_reason TEXT,
  created_at      TEXT NOT NULL
);
CREATE INDEX webhook_endpoints_workspace ON webhook_endpoints(workspace_id);

-- One delivery per endpoint and event, created with the event; sent in order per subject.
CREATE TABLE webhook_deliveries (
  id              TEXT PRIMARY KEY,
  endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  event_seq       INTEGER NOT NULL REFERENCES events(seq) ON DELETE CASCADE,
  subject_id      TEXT NOT NULL,
  state           TEXT NOT NULL CHECK (state IN ('pending', 'succeeded', 'failed')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_attempt_at TEXT NOT NULL,
  leased_by       TEXT,
  leased_until    TEXT,
  last_attempt_at TEXT,
  last_status     INTEGER,
  last_error      TEXT,
  created_at      TEXT NOT NULL,
  delivered_at    TEXT,
  UNIQUE (endpoint_id, event_seq)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(state, next_attempt_at);
CREATE INDEX webhook_deliveries_order ON webhook_deliveries(endpoint_id, subject_id, state, event_seq);

-- The page at a ui_changed or browser_error failure, sealed (a PNG as base64 under the master key).
CREATE TABLE failure_screenshots (
  action_id   TEXT PRIMARY KEY REFERENCES actions(id),
  png_sealed  BLOB NOT NULL,
  created_at  TEXT NOT NULL
);

CREATE TABLE feedback (
  id             TEXT PRIMARY KEY,
  workspace_id   TEXT NOT NULL REFERENCES workspaces(id),
  key_id         TEXT,
  message        TEXT NOT NULL,
  action_id      TEXT,
  platform       TEXT,
  type           TEXT,
  error_code     TEXT,
  error_message  TEXT,
  created_at     TEXT NOT NULL
);
CREATE INDEX feedback_workspace ON feedback(workspace_id, created_at);
