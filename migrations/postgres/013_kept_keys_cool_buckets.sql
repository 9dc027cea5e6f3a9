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
