-- Routines (DESIGN §14): named, parameterised, versioned recipes of browser steps, saved by an agent
-- for one platform in one workspace. A name is the workspace's for good: deleting it marks the row,
-- and saving the name again continues its version numbers, so (workspace, name, version) always
-- names the steps a past action ran. Versions are never changed once written.
CREATE TABLE routines (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  name         TEXT NOT NULL,
  platform     TEXT NOT NULL,
  latest       INTEGER NOT NULL,
  created_at   TEXT NOT NULL,
  updated_at   TEXT NOT NULL,
  deleted_at   TEXT,
  PRIMARY KEY (workspace_id, name)
);
CREATE TABLE routine_versions (
  workspace_id   TEXT NOT NULL,
  name           TEXT NOT NULL,
  version        INTEGER NOT NULL,
  platform       TEXT NOT NULL,
  description    TEXT NOT NULL,
  params_schema  TEXT NOT NULL,
  steps          TEXT NOT NULL,
  from_action_id TEXT,
  created_at     TEXT NOT NULL,
  PRIMARY KEY (workspace_id, name, version),
  FOREIGN KEY (workspace_id, name) REFERENCES routines(workspace_id, name)
);
-- A routine action's secret params (`"writeOnly": true`), sealed like credentials: the action's own
-- params show "[secret]" in their place. Dropped once the action has ended.
CREATE TABLE action_secret_params (
  action_id     TEXT PRIMARY KEY REFERENCES actions(id) ON DELETE CASCADE,
  params_sealed BLOB NOT NULL
);
