-- The outbox is read in (tx_order, seq) order on both databases (decisions: "The outbox is read in
-- transaction order"). SQLite has one writer, so transactions commit in seq order and tx_order is
-- always 0: the order is seq's, as before.
ALTER TABLE events ADD COLUMN tx_order INTEGER NOT NULL DEFAULT 0;
CREATE INDEX events_order ON events (workspace_id, tx_order, seq);
CREATE INDEX events_order_all ON events (tx_order, seq);
DROP INDEX events_workspace;
