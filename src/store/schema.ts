import type { ColumnType, Generated } from "kysely";

/**
 * The tables as both databases hold them (`migrations/sqlite`, `migrations/postgres`): times are
 * ISO-8601 text, JSON is text, booleans are 0/1 integers, sealed secrets are bytes (BLOB, bytea).
 * The two dialects return the same row for the same statement; `seq` columns are 64-bit integers
 * that PostgreSQL hands over as numbers (see `adapters/postgres.ts`).
 */
export interface Schema {
  schema_migrations: { version: number; name: string; applied_at: string };
  workspaces: { id: string; name: string; balance: ColumnType<number, number | undefined, number>; created_at: string };
  api_keys: {
    id: string;
    workspace_id: string;
    key_hash: string;
    prefix: string;
    role: string;
    account_ids: string | null;
    created_at: string;
    revoked_at: string | null;
  };
  accounts: {
    id: string;
    workspace_id: string;
    platform: string;
    username: string;
    password_sealed: Buffer | null;
    totp_sealed: Buffer | null;
    session_sealed: Buffer | null;
    status: ColumnType<string, string | undefined, string>;
    status_reason: ColumnType<string | null, string | null | undefined, string | null>;
    checked_at: ColumnType<string | null, string | null | undefined, string | null>;
    next_check_at: ColumnType<string | null, string | null | undefined, string | null>;
    check_failures: ColumnType<number, number | undefined, number>;
    /** JSON {type: {per_hour?, per_day?, min_gap_seconds?}}: overrides of the driver's paces (DESIGN §16). */
    pace: ColumnType<string | null, string | null | undefined, string | null>;
    profile: string | null;
    last_totp_step: number | null;
    created_at: string;
    updated_at: string;
    deleted_at: string | null;
  };
  actions: {
    seq: Generated<number>;
    id: string;
    workspace_id: string;
    account_id: string;
    platform: string;
    type: string;
    params: string;
    status: string;
    error_code: string | null;
    error_message: string | null;
    result: string | null;
    price: number;
    cost: ColumnType<number, number | undefined, number>;
    held: ColumnType<number, number | undefined, number>;
    runner_id: string | null;
    /** The fencing number: grows each time the action changes hands (DESIGN §11). */
    lease: ColumnType<number, number | undefined, number>;
    committed_at: string | null;
    answered_by: ColumnType<string | null, string | null | undefined, string | null>;
    /** Pacing (DESIGN §16): a queued action runs no earlier; when its run first started. */
    not_before: ColumnType<string | null, string | null | undefined, string | null>;
    started_at: ColumnType<string | null, string | null | undefined, string | null>;
    created_at: string;
    updated_at: string;
    finished_at: string | null;
  };
  pace_cooldowns: { account_id: string; type: string; until: string; strikes: number };
  challenges: {
    id: string;
    action_id: string;
    kind: string;
    message: string;
    expires_at: string;
    link_hash: string;
    link_sealed: Buffer;
    link_expires_at: string;
    refusals: ColumnType<number, number | undefined, number>;
    state: string;
    answer_sealed: Buffer | null;
    answered_by: ColumnType<string | null, string | null | undefined, string | null>;
    /** No longer read (migration 012): the inbox's window is the action's start now. */
    inbox_after: ColumnType<string | null, string | null | undefined, string | null>;
    inbox_closed_at: ColumnType<string | null, string | null | undefined, string | null>;
    created_at: string;
    updated_at: string;
  };
  credit_ledger: {
    seq: Generated<number>;
    workspace_id: string;
    kind: string;
    amount: number;
    action_id: string | null;
    reference: string | null;
    created_at: string;
  };
  idempotency_keys: {
    workspace_id: string;
    key: string;
    request_hash: string;
    state: string;
    action_id: string | null;
    payment_id: string | null;
    response_status: number | null;
    response_body: string | null;
    runner_id: string | null;
    /** The token of the request that claimed the key (migration 008/014): attach and complete name it. */
    claim: string | null;
    created_at: string;
    expires_at: string;
  };
  sign_in_links: {
    id: string;
    account_id: string;
    link_hash: string;
    expires_at: string;
    state: string;
    key_id: string | null;
    created_at: string;
    updated_at: string;
  };
  totp_steps: { platform: string; username: string; last_step: number };
  /** Owner sign-in holds on accounts: no action of the account is claimed while one is live. */
  account_holds: {
    account_id: string;
    runner_id: string;
    expires_at: string;
    created_at: string;
  };
  runners: {
    id: string;
    kind: string;
    host: string;
    pid: number;
    public_url: string | null;
    internal_url: string | null;
    started_at: string;
    lease_expires_at: string;
    /** Run slots it had free at its last renewal (claims wait for it only while it has one). */
    free_slots: number;
  };
  payments: {
    id: string;
    workspace_id: string;
    network: string;
    asset: string;
    payer: string;
    nonce: string;
    credits: number;
    amount: string;
    status: string;
    reason: string | null;
    payload_sealed: Buffer | null;
    transaction_hash: string | null;
    runner_id: string | null;
    created_at: string;
    updated_at: string;
  };
  web_sessions: { token_hash: string; key_id: string; created_at: string; last_seen_at: string; expires_at: string };
  events: {
    seq: Generated<number>;
    /** Where readers place the event: its transaction's order (repositories/events.ts); 0 on SQLite. */
    tx_order: Generated<number>;
    id: string;
    workspace_id: string;
    type: string;
    subject_id: string;
    account_id: string;
    challenge_id: string | null;
    data: string;
    created_at: string;
  };
  webhook_endpoints: {
    id: string;
    workspace_id: string;
    url: string;
    events: string | null;
    account_ids: string | null;
    secret_sealed: Buffer;
    failing_since: string | null;
    disabled_at: string | null;
    disabled_reason: string | null;
    created_at: string;
  };
  webhook_deliveries: {
    id: string;
    endpoint_id: string;
    event_seq: number;
    subject_id: string;
    state: string;
    attempts: ColumnType<number, number | undefined, number>;
    next_attempt_at: string;
    leased_by: string | null;
    leased_until: string | null;
    last_attempt_at: string | null;
    last_status: number | null;
    last_error: string | null;
    created_at: string;
    delivered_at: string | null;
  };
  /** PostgreSQL only: the per-key rate limit's buckets, shared by every coordinator. */
  rate_limits: { caller: string; tokens: number; at: number; taken: number };
  inboxes: { account_id: string; email_hash: string; email_sealed: Buffer; sms_hash: string; sms_sealed: Buffer; created_at: string };
  inbox_messages: {
    id: string;
    account_id: string;
    channel: string;
    source: string;
    from_sealed: Buffer | null;
    body_sealed: Buffer;
    received_at: string;
    used_for: string | null;
    expires_at: string;
    found: string | null;
    may_answer: ColumnType<number, number | undefined, number>;
    answer_sealed: Buffer | null;
  };
  failure_screenshots: { action_id: string; png_sealed: Buffer; created_at: string };
  feedback: {
    id: string;
    workspace_id: string;
    key_id: string | null;
    message: string;
    action_id: string | null;
    platform: string | null;
    type: string | null;
    error_code: string | null;
    error_message: string | null;
    created_at: string;
  };
  /** Routines (DESIGN §14): one row a name, its versions beside it. */
  routines: { workspace_id: string; name: string; platform: string; latest: number; created_at: string; updated_at: string; deleted_at: string | null };
  routine_versions: {
    workspace_id: string;
    name: string;
    version: number;
    platform: string;
    description: string;
    /** JSON: the params' JSON Schema. */
    params_schema: string;
    /** JSON: the steps. */
    steps: string;
    from_action_id: string | null;
    created_at: string;
  };
  action_secret_params: { action_id: string; params_sealed: Buffer };
}
