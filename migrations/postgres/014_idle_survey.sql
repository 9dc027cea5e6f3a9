-- The lease's renewal also says what its heartbeat has to do (DESIGN §11, "an idle coordinator
-- sends at most one statement a second"; src/store/repositories/work-due.ts), every 3 s on every
-- coordinator: each thing it asks must be an index lookup, never a scan, or a renewal would wait on
-- a big table. Keys in flight are few among a day's keys; the survey asks only whether one is left
-- by a runner that is gone.
CREATE INDEX idempotency_in_flight ON idempotency_keys (runner_id) WHERE state = 'in_flight';
