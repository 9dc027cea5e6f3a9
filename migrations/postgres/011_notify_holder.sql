-- An action's notification says what it now is and who holds it (DESIGN §11, "Scaling out adds
-- capacity"; src/store/change-feed.ts `actionChange`): `action:<id>:<status>:<runner_id>|<writer>`,
-- the runner empty when none holds it. A runner then syncs only the actions it holds (an answer or
-- a cancel written on another coordinator), the others do nothing, and no one reads the store to
-- find out. A challenge's change names its action as it stands in the same transaction (the action
-- row is read by its key). Every other subject stays as 010 sent it.
CREATE OR REPLACE FUNCTION action_service_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  writer text := coalesce(current_setting('application_name', true), '');
  action record;
BEGIN
  IF TG_TABLE_NAME = 'actions' THEN
    PERFORM pg_notify('action_service_changes', 'action:' || NEW.id || ':' || NEW.status || ':' || coalesce(NEW.runner_id, '') || '|' || writer);
  ELSIF TG_TABLE_NAME = 'challenges' THEN
    SELECT a.status, a.runner_id INTO action FROM actions a WHERE a.id = NEW.action_id;
    PERFORM pg_notify('action_service_changes', 'action:' || NEW.action_id || ':' || coalesce(action.status, '') || ':' || coalesce(action.runner_id, '') || '|' || writer);
  ELSIF TG_TABLE_NAME = 'events' THEN
    PERFORM pg_notify('action_service_changes', 'event:' || NEW.workspace_id || '|' || writer);
  ELSIF TG_TABLE_NAME = 'webhook_deliveries' THEN
    PERFORM pg_notify('action_service_changes', 'delivery' || '|' || writer);
  END IF;
  RETURN NULL;  -- an AFTER trigger: the row is written already
END;
$$;
