-- Owner sign-in links: a live browser on the platform's sign-in page in the account's own context.
CREATE TABLE sign_in_links (
  id           TEXT PRIMARY KEY,
  account_id   TEXT NOT NULL REFERENCES accounts(id),
  link_hash    TEXT NOT NULL UNIQUE,
  expires_at   TEXT NOT NULL,
  state        TEXT NOT NULL CHECK (state IN ('open', 'completed')),
  created_at   TEXT NOT NULL,
  updated_at   TEXT NOT NULL
);
CREATE INDEX sign_in_links_account ON sign_in_links(account_id);
