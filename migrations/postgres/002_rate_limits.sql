-- The per-key rate limit, shared by every coordinator (DESIGN §11): one token bucket per caller
-- (a key id, `owner:<workspace>`, `live:<hash>`, `web-sign-in:<address>`). `at` is the last take
-- in ms since the epoch; `taken` says whether that take got a token. Never on SQLite: one
-- machine keeps its buckets in the process.
CREATE TABLE rate_limits (
  caller  text PRIMARY KEY,
  tokens  double precision NOT NULL,
  at      double precision NOT NULL,
  taken   integer NOT NULL
);
CREATE INDEX rate_limits_at ON rate_limits (at);
