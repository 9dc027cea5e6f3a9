-- Idempotency keys are fenced (DESIGN §11): each claim of a key carries a token of its own, and
-- the request that claimed it attaches its action and completes the key only while the record
-- still carries that token. A claimant that stalled past its lease, whose key was settled and
-- claimed again by another coordinator, changes nothing.
ALTER TABLE idempotency_keys ADD COLUMN claim TEXT;

-- An owner's sign-in hold on an account, in the store (DESIGN §11): while its runner's lease holds
-- and it has not expired, no coordinator claims the account's actions, and a live link opened on
-- any coordinator is forwarded to the one that holds the sign-in page.
CREATE TABLE account_holds (
  account_id  TEXT PRIMARY KEY,
  runner_id   TEXT NOT NULL,
  expires_at  TEXT NOT NULL,
  created_at  TEXT NOT NULL
);
CREATE INDEX account_holds_runner ON account_holds (runner_id);
