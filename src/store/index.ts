import type { Db } from "./database.js";
import type { Sealer } from "./crypto.js";
import { ReadCache } from "./read-cache.js";
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

export { openDatabase, type Db } from "./database.js";
export { isBusy, retryWhileBusy } from "./busy.js";
export { Sealer, loadMasterKey, randomToken, sha256 } from "./crypto.js";
export type * from "./records.js";
export type { SignInLinkRecord } from "./repositories/sign-in-links.js";
export type { RunnerRecord } from "./repositories/runners.js";
export type { PaymentRecord } from "./repositories/payments.js";
export type { KeyListing } from "./repositories/workspaces.js";
export type { WebSessionRecord } from "./repositories/web-sessions.js";
export type { EventRecord, EventType } from "./repositories/events.js";
export type { FeedbackRecord } from "./repositories/feedback.js";
export type { WebhookDeliveryRecord, WebhookEndpointRecord, DeliveryState } from "./repositories/webhooks.js";

/** The only code that writes SQL: repositories over one database, and its transactions. */
export class Store {
  readonly workspaces: WorkspaceRepository;
  readonly accounts: AccountRepository;
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

  constructor(
    readonly db: Db,
    /** Seals values with the master key (rows' secrets; tokens handed to clients, see `engine/client-tokens.ts`). */
    readonly sealer: Sealer,
  ) {
    const cache = new ReadCache(db);
    this.workspaces = new WorkspaceRepository(db, cache);
    this.accounts = new AccountRepository(db, sealer);
    this.actions = new ActionRepository(db, cache);
    this.challenges = new ChallengeRepository(db, sealer);
    this.ledger = new LedgerRepository(db);
    this.idempotency = new IdempotencyRepository(db);
    this.signInLinks = new SignInLinkRepository(db);
    this.totpSteps = new TotpStepRepository(db);
    this.runners = new RunnerRepository(db);
    this.payments = new PaymentRepository(db, sealer);
    this.webSessions = new WebSessionRepository(db);
    this.events = new EventRepository(db);
    this.webhooks = new WebhookRepository(db, sealer);
    this.feedback = new FeedbackRepository(db, sealer);
  }

  /**
   * Changes whenever another connection (another process) has committed: a cheap way to
   * notice answers, cancels and new actions written elsewhere.
   */
  dataVersion(): number {
    return this.db.pragma("data_version", { simple: true }) as number;
  }

  /** Runs `work` in an IMMEDIATE transaction (nested calls become savepoints). */
  transaction<T>(work: () => T): T {
    return this.db.transaction(work).immediate();
  }

  close(): void {
    this.db.close();
  }
}
