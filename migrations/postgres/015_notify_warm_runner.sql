-- A new action wakes the coordinator its account is warm on (DESIGN §11: "a coordinator prefers
-- accounts warm in its own browser"; docs/decisions.md, issue 41). A claim passes over an action
-- whose account another live runner with a free slot ran last (repositories/actions.ts
-- `claimable`), so that runner must hear of it, and only that one: a queued action's notification
-- names, in its runner field, the runner that ran the account's newest other action (health checks
-- left out). It is empty for an account no runner has run. Every other payload stays as 011 sent it.
CREATE OR REPLACE FUNCTION action_service_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  writer text := coalesce(current_setting('application_name', true), '');
  action record;
  runner text;
BEGIN
  IF TG_TABLE_NAME = 'actions' THEN
    runner := NEW.runner_id;
    IF TG_OP = 'INSERT' AND NEW.status = 'queued' AND runner IS NULL THEN
      SELECT l.runner_id INTO runner FROM actions l
        WHERE l.account_id = NEW.account_id AND l.id <> NEW.id AND l.runner_id IS NOT NULL AND l.type <> 'check'
        ORDER BY l.seq DESC LIMIT 1;
    END IF;
    PERFORM pg_notify('action_service_changes', 'action:' || NEW.id || ':' || NEW.status || ':' || coalesce(runner, '') || '|' || writer);
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
