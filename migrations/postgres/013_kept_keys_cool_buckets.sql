-- Keys are kept between reads on PostgreSQL (DESIGN §11, "Scaling out adds capacity";
-- src/store/adapters/feed-cache.ts): every coordinator keeps a key it has read, and drops it when
-- the change feed says the key's row changed. The key lookup reads that row alone (its hash, its
-- revocation, role, workspace and account list), so a change to it is the only change to a key's
-- standing: revoked, or anything else an UPDATE or DELETE may do. The payload is
-- `key:<key id>|<application_name>`, as 010 shaped the others; a new key notifies nobody (an
-- unknown key is never kept).
CREATE FUNCTION action_service_notify_key_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('action_service_changes', 'key:' || OLD.id || '|' || coalesce(current_setting('application_name', true), ''));
  RETURN NULL;  -- an AFTER trigger: the row is written already
END;
$$;

CREATE TRIGGER api_keys_notify AFTER UPDATE OR DELETE ON api_keys
  FOR EACH ROW EXECUTE FUNCTION action_service_notify_key_changed();

-- The rate-limit buckets off the logged hot path (decisions: "Rate-limit buckets on PostgreSQL"):
-- every request takes from its key's bucket, so each take was a logged update whose commit waited
-- for the WAL to reach the disk. Unlogged, a take writes no WAL and its commit waits for no flush;
-- a crash empties the table, which only refills every bucket. Without the index on `at` (the
-- purge's scan of a table of one row per recent caller is cheap) and with room left on each page,
-- a take is a HOT update: no index entry is written either. A coordinator takes for every request
-- of a caller that waited behind the take under way in one statement: `taken` counts the tokens
-- the last take got (it was 0 or 1).
DROP INDEX rate_limits_at;
ALTER TABLE rate_limits SET (fillfactor = 50);
ALTER TABLE rate_limits SET UNLOGGED;
