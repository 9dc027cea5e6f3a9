-- A released sign-in hold wakes every coordinator (DESIGN §11, src/store/change-feed.ts): the
-- account's queued actions may be claimed again, and without a notification the others would see
-- that only at their next heartbeat. A hold's row is deleted when it is released; a row updated is
-- a hold taken again (after its runner died), which frees nothing, so it notifies nobody. The
-- payload names the account: `account:<account id>`. A hold that ends with its expiry or its
-- runner's lease changes no row: the others see it at their heartbeat, with the lease.
CREATE FUNCTION action_service_notify_hold_released() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('action_service_changes', 'account:' || OLD.account_id);
  RETURN NULL;  -- an AFTER trigger: the row is gone already
END;
$$;

CREATE TRIGGER account_holds_released_notify AFTER DELETE ON account_holds
  FOR EACH ROW EXECUTE FUNCTION action_service_notify_hold_released();
