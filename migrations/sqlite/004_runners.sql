-- Execution across processes (DESIGN §11): the store, not a process's memory, says who runs what.
-- Every runner (each `serve`, each stdio `mcp`) holds a lease it renews by heartbeat; an action's
-- runner_id names the runner that claimed it. Actions of a runner whose lease has expired are
-- recovered by whichever live runner sees it first.
CREATE TABLE runners (
  id                TEXT PRIMARY KEY,
  kind              TEXT NOT NULL,    -- serve | mcp | demo | …
  host              TEXT NOT NULL,
  pid               INTEGER NOT NULL,
  public_url        TEXT,             -- where its live links are served: a challenge's link names the process holding the page
  started_at        TEXT NOT NULL,
  lease_expires_at  TEXT NOT NULL
);
CREATE INDEX actions_runner ON actions(runner_id);

-- An answer goes through the store: sealed on the challenge until the runner holding the page takes it.
ALTER TABLE challenges ADD COLUMN answer_sealed BLOB;

-- A request in flight belongs to the process serving it: only a dead runner's are settled.
ALTER TABLE idempotency_keys ADD COLUMN runner_id TEXT;
