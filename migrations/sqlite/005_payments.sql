-- x402 top-ups (DESIGN §7). One row per signed EIP-3009 authorization, claimed by (network, asset,
-- payer, nonce) before the facilitator is asked anything, so a replayed or parallel copy of a
-- payment never reaches it twice and is credited at most once. The ledger row of a settled payment
-- carries reference `x402:<payment id>` (UNIQUE), the last guard against a double credit.
CREATE TABLE payments (
  id               TEXT PRIMARY KEY,           -- pay_…
  workspace_id     TEXT NOT NULL REFERENCES workspaces(id),
  network          TEXT NOT NULL,              -- CAIP-2, e.g. eip155:8453
  asset            TEXT NOT NULL,              -- lower-case token address
  payer            TEXT NOT NULL,              -- lower-case address of the authorization's signer
  nonce            TEXT NOT NULL,              -- the authorization's nonce (lower-case hex)
  credits          INTEGER NOT NULL CHECK (credits > 0),
  amount           TEXT NOT NULL,              -- in the asset's smallest unit
  status           TEXT NOT NULL CHECK (status IN ('verifying', 'settling', 'settled', 'failed')),
  reason           TEXT,                       -- why it failed (the facilitator's words)
  payload_sealed   BLOB,                       -- the signed payload until it is settled or failed: a bearer instrument, sealed
  transaction_hash TEXT,
  runner_id        TEXT,                       -- the process working on it (verifying/settling)
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL,
  UNIQUE (network, asset, payer, nonce)
);
CREATE INDEX payments_pending ON payments(status) WHERE status IN ('verifying', 'settling');

-- An Idempotency-Key of a top-up names its payment, as one of an action names its action.
ALTER TABLE idempotency_keys ADD COLUMN payment_id TEXT REFERENCES payments(id);
