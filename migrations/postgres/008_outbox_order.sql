-- The outbox without a cluster-wide lock (decisions: "The outbox is read in transaction order").
-- Each event records where readers place it, tx_order: its transaction's id, or the newest
-- transaction id already ended when the insert's snapshot was taken if that is greater. Readers
-- follow (tx_order, seq) and read only below the horizon (the oldest transaction still running in
-- this database, and no further than what has ended), so no event commits behind a reader, and an
-- event written after another event's commit is placed after it. Events written before this
-- migration keep 0: they committed in seq order under the lock they were written with. The
-- constant first, then the default, so that adding the column rewrites no row.
ALTER TABLE events ADD COLUMN tx_order bigint NOT NULL DEFAULT 0;
ALTER TABLE events ALTER COLUMN tx_order SET DEFAULT GREATEST(pg_current_xact_id()::text::bigint, pg_snapshot_xmax(pg_current_snapshot())::text::bigint - 1);
CREATE INDEX events_order ON events (workspace_id, tx_order, seq);
CREATE INDEX events_order_all ON events (tx_order, seq);
DROP INDEX events_workspace;
