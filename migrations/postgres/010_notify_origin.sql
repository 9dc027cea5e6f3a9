-- Notifications say who wrote what they announce (DESIGN §11, "Scaling out adds capacity";
-- src/store/change-feed.ts): the payload is `<subject>|<application_name>`, and every store
-- connection announces `action-service/<origin>` as its application_name (PgBouncer passes it on
-- in transaction mode too). A coordinator can then leave its own writes to itself, and the others
-- act on a change only when it is theirs to act on. The subjects stay as 001 and 009 named them.
CREATE OR REPLACE FUNCTION action_service_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  writer text := coalesce(current_setting('application_name', true), '');
BEGIN
  IF TG_TABLE_NAME = 'actions' THEN
    PERFORM pg_notify('action_service_changes', 'action:' || NEW.id || '|' || writer);
  ELSIF TG_TABLE_NAME = 'challenges' THEN
    PERFORM pg_notify('action_service_changes', 'action:' || NEW.action_id || '|' || writer);
  ELSIF TG_TABLE_NAME = 'events' THEN
    PERFORM pg_notify('action_service_changes', 'event:' || NEW.workspace_id || '|' || writer);
  ELSIF TG_TABLE_NAME = 'webhook_deliveries' THEN
    PERFORM pg_notify('action_service_changes', 'delivery' || '|' || writer);
  END IF;
  RETURN NULL;  -- an AFTER trigger: the row is written already
END;
$$;

CREATE OR REPLACE FUNCTION action_service_notify_hold_released() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('action_service_changes', 'account:' || OLD.account_id || '|' || coalesce(current_setting('application_name', true), ''));
  RETURN NULL;  -- an AFTER trigger: the row is gone already
END;
$$;
