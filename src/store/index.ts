import type { Sealer } from "./crypto.js";
import type { Dialect, StoreAdapter, TransactionOptions } from "./adapter.js";
import type { ChangeFeed } from "./change-feed.js";
import { PostgresAdapter } from "./adapters/postgres.js";
import { SqliteAdapter } from "./adapters/sqlite.js";
import type { Db } from "./adapters/sqlite-file.js";
import { Queries } from "./queries.js";
import { AccountHoldRepository } from "./repositories/account-holds.js";
import { AccountRepository } from "./repositories/accounts.js";
import { ActionRepository } from "./repositories/actions.js";
import { ChallengeRepository } from "./repositories/challenges.js";
import { IdempotencyRepository } from "./repositories/idempotency.js";
import { LedgerRepository } from "./repositories/ledger.js";
import { PaymentRepository } from "./repositories/payments.js";
import { RunnerRepository } from "./repositories/runners.js";
import { SignInLinkRepository } from "./repositories/sign-in-links.js";
import { TotpStepRepository } from "./repositories/totp-steps.js";
import { WebSessionRepository } from "./repositories/web-sessions.js";
import { EventRepository } from "./repositories/events.js";
import { FeedbackRepository } from "./repositories/feedback.js";
import { WebhookRepository } from "./repositories/webhooks.js";
import { WorkspaceRepository } from "./repositories/workspaces.js";
import { RateLimitRepository } from "./repositories/rate-limits.js";
import { InboxRepository } from "./repositories/inbox.js";
import { PaceCooldownRepository } from "./repositories/pace-cooldowns.js";
import { WakeUpRepository } from "./repositories/wake-ups.js";
import { RoutineRepository } from "./repositories/routines.js";

export { openDatabase, type Db } from "./adapters/sqlite-file.js";
export { CommitUnknownError, DatabaseUnreachableError, isBusy, isOutcomeUnknown, retryWhileBusy, retryWhileOutcomeUnknown } from "./adapters/busy.js";
export { SchemaTooNewError } from "./adapters/schema-version.js";
export type { Dialect, StoreAdapter } from "./adapter.js";
export { SqliteAdapter } from "./adapters/sqlite.js";
export { PostgresAdapter, migratePostgres } from "./adapters/postgres.js";

/**
 * Where the store lives: the data dir's SQLite file, or a PostgreSQL database
 * (`ACTION_SERVICE_DATABASE_URL`; `listenUrl`, `ACTION_SERVICE_DATABASE_LISTEN_URL`: a direct
 * connection to it when `databaseUrl` goes through a pooler).
 */
export type StoreLocation = { sqliteFile: string } | { databaseUrl: string; listenUrl?: string | undefined };

/** Opens the database (applying pending migrations) and the store over it. */
export async function openStore(location: StoreLocation, sealer: Sealer): Promise<Store> {
  const adapter = "databaseUrl" in location ? await PostgresAdapter.open(location.databaseUrl, { listenUrl: location.listenUrl }) : SqliteAdapter.open(location.sqliteFile);
  return new Store(adapter, sealer);
}
export { Sealer, loadMasterKey, randomToken, sha256 } from "./crypto.js";
export type * from "./records.js";
export type { SignInLinkRecord } from "./repositories/sign-in-links.js";
export type { RunnerRecord } from "./repositories/runners.js";
export type { WorkDue } from "./repositories/work-due.js";
export type { PaymentRecord } from "./repositories/payments.js";
export type { KeyListing } from "./repositories/workspaces.js";
export type { WebSessionRecord } from "./repositories/web-sessions.js";
export type { EventCursor, EventRecord, EventType } from "./repositories/events.js";
export { OUTBOX_START, cursorOf } from "./repositories/events.js";
export { QUEUED_SUBJECT, actionChange, type ActionChange, type Change } from "./change-feed.js";
export type { AccountChanges } from "./repositories/accounts.js";
export type { FeedbackRecord } from "./repositories/feedback.js";
export type { Candidate, InboxTokens, NewMessage } from "./repositories/inbox.js";
export type { PaceCooldown } from "./repositories/pace-cooldowns.js";
export type { ClaimCandidate } from "./repositories/actions.js";
export type { RoutineRecord, RoutineVersionRecord } from "./repositories/routines.js";
export type { WebhookDeliveryRecord, WebhookEndpointRecord, DeliveryState } from "./repositories/webhooks.js";

/** The only code that writes SQL: repositories over one database, and its transactions. */
export class Store {
  readonly #queries: Queries;
  readonly workspaces: WorkspaceRepository;
  readonly accounts: AccountRepository;
  readonly accountHolds: AccountHoldRepository;
  readonly actions: ActionRepository;
  readonly challenges: ChallengeRepository;
  readonly ledger: LedgerRepository;
  readonly idempotency: IdempotencyRepository;
  readonly signInLinks: SignInLinkRepository;
  readonly totpSteps: TotpStepRepository;
  readonly runners: RunnerRepository;
  readonly payments: PaymentRepository;
  readonly webSessions: WebSessionRepository;
  readonly events: EventRepository;
  readonly webhooks: WebhookRepository;
  readonly feedback: FeedbackRepository;
  readonly rateLimits: RateLimitRepository;
  readonly inbox: InboxRepository;
  readonly paceCooldowns: PaceCooldownRepository;
  /** Routines and their versions (DESIGN §14). */
  readonly routines: RoutineRepository;
  /** Wake-ups a writer sends itself (PostgreSQL), beside the triggers' own. */
  readonly wakeUps: WakeUpRepository;

  constructor(
    readonly adapter: StoreAdapter,
    /** Seals values with the master key (rows' secrets; tokens handed to clients, see `engine/access/client-tokens.ts`). */
    readonly sealer: Sealer,
  ) {
    const q = (this.#queries = new Queries(adapter));
    this.workspaces = new WorkspaceRepository(q);
    this.accounts = new AccountRepository(q, sealer);
    this.accountHolds = new AccountHoldRepository(q);
    this.actions = new ActionRepository(q);
    this.challenges = new ChallengeRepository(q, sealer);
    this.inbox = new InboxRepository(q, sealer);
    this.paceCooldowns = new PaceCooldownRepository(q);
    this.ledger = new LedgerRepository(q);
    this.idempotency = new IdempotencyRepository(q);
    this.signInLinks = new SignInLinkRepository(q);
    this.totpSteps = new TotpStepRepository(q);
    this.runners = new RunnerRepository(q, adapter instanceof PostgresAdapter ? adapter.leaseDb : adapter.db);
    this.payments = new PaymentRepository(q, sealer);
    this.webSessions = new WebSessionRepository(q);
    this.events = new EventRepository(q);
    this.webhooks = new WebhookRepository(q, sealer);
    this.feedback = new FeedbackRepository(q, sealer);
    this.rateLimits = new RateLimitRepository(q);
    this.wakeUps = new WakeUpRepository(q);
    this.routines = new RoutineRepository(q, sealer);
  }

  get dialect(): Dialect {
    return this.adapter.dialect;
  }

  /** The SQLite connection itself, for what only SQLite has (a backup, a pragma); undefined on PostgreSQL. */
  get sqlite(): Db | undefined {
    return this.adapter instanceof SqliteAdapter ? this.adapter.connection : undefined;
  }

  /**
   * Runs `work` in one transaction: everything it writes through the store, awaited or called
   * from it, commits together or not at all (a transaction inside another is a savepoint). On
   * PostgreSQL it may run more than once (a serialization conflict): it must only touch the store.
   */
  transaction<T>(work: () => Promise<T>, options?: TransactionOptions): Promise<T> {
    return this.#queries.transaction(work, options);
  }

  /** Wake-ups for what other processes commit (answers, cancels, new actions, events). */
  get changes(): ChangeFeed {
    return this.adapter.changes;
  }

  /** This store's name among the fleet's writers (`StoreAdapter.origin`). */
  get origin(): string {
    return this.adapter.origin;
  }

  /** Statements sent to the database so far (BEGIN and COMMIT included): see `StoreAdapter.statementCount`. */
  get statementCount(): number {
    return this.adapter.statementCount;
  }

  /** Transactions the database refused and that were run again: see `StoreAdapter.retriedTransactions`. */
  get retriedTransactions(): number {
    return this.adapter.retriedTransactions;
  }

  /** The newest migration applied. */
  async schemaVersion(): Promise<number> {
    const row = await this.adapter.db.selectFrom("schema_migrations").select((eb) => eb.fn.max("version").as("version")).executeTakeFirst();
    return Number(row?.version ?? 0);
  }

  /** Runs `callback` once what this context writes has committed (at once outside a transaction), else `rolledBack`. */
  afterCommit(callback: () => void, rolledBack?: () => void): void {
    this.#queries.afterCommit(callback, rolledBack);
  }

  /** Runs `work` outside any transaction of this context: what it starts does not join one. */
  outside<T>(work: () => T): T {
    return this.#queries.outside(work);
  }

  /** Whether this asynchronous context is inside a transaction. */
  get inTransaction(): boolean {
    return this.#queries.inTransaction;
  }

  close(): Promise<void> {
    return this.adapter.close();
  }
}
