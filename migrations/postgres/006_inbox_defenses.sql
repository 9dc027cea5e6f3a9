-- The inbox under attack (DESIGN §15). Each message is read once, when it arrives: what it holds
-- (`found`: a code, a link, or NULL for nothing) and whether it may be typed (`may_answer`: found,
-- and from a sender the platform's declaration authenticates), the answer itself sealed. A
-- challenge is matched against those columns, never by reading the messages again.
ALTER TABLE inbox_messages ADD COLUMN found text CHECK (found IN ('code', 'link'));
ALTER TABLE inbox_messages ADD COLUMN may_answer integer NOT NULL DEFAULT 0 CHECK (may_answer IN (0, 1));
ALTER TABLE inbox_messages ADD COLUMN answer_sealed bytea;
CREATE INDEX inbox_messages_candidates ON inbox_messages (account_id, channel, may_answer, used_for, received_at);

-- When the inbox stopped answering a challenge: a code it typed was refused, so the challenge is a
-- person's now (the inbox never types more than one wrong code per challenge). `inbox_after` is no
-- longer read: a message answers only an action that had begun running when it arrived.
ALTER TABLE challenges ADD COLUMN inbox_closed_at text;
