-- Claims prefer accounts warm in their own coordinator's browser (DESIGN §11 "Scaling out adds
-- capacity"; docs/decisions.md, issue 41 piece C). A runner's row says how many run slots it had
-- free at its last renewal: a claim passes over an account another live runner ran last only while
-- that runner has one (0, the default, is what a coordinator that does not say it writes: it is
-- never waited for). The account's last runner is read from its newest action that had one,
-- through this index.
ALTER TABLE runners ADD COLUMN free_slots INTEGER NOT NULL DEFAULT 0;
CREATE INDEX actions_account_seq ON actions(account_id, seq);
