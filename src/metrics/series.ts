import { Counter, Gauge, Histogram, Registry } from "prom-client";

/**
 * Seconds an action waits or runs: from a fraction of a second (the sandbox) to an hour (a pace
 * that holds an action back, a person slow to answer a challenge).
 */
const DURATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

/** The counters and histograms this coordinator moves as actions change (DESIGN §16), in one registry. */
export class ActionSeries {
  readonly actions: Counter<"platform" | "type" | "status" | "error_code">;
  readonly waitSeconds: Histogram<"platform" | "type">;
  readonly runSeconds: Histogram<"platform" | "type" | "status">;
  readonly challenges: Counter<"kind">;
  readonly answers: Counter<"kind" | "answered_by">;
  readonly healthChecks: Counter<"outcome">;

  constructor(registry: Registry) {
    const registers = [registry];
    this.actions = new Counter({
      name: "action_service_actions_total",
      help: "Status changes this coordinator made to actions, by the status moved to (queued: created here); error_code on failed ones. Health checks are not counted.",
      labelNames: ["platform", "type", "status", "error_code"],
      registers,
    });
    this.waitSeconds = new Histogram({
      name: "action_service_action_wait_seconds",
      help: "Seconds an action waited queued before this coordinator started it (from creation, or from being queued again after a recovery).",
      labelNames: ["platform", "type"],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.runSeconds = new Histogram({
      name: "action_service_action_run_seconds",
      help: "Seconds from this coordinator starting an action to its end (time at needs_input included), by the status it ended in.",
      labelNames: ["platform", "type", "status"],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.challenges = new Counter({
      name: "action_service_challenges_total",
      help: "Sign-in challenges this coordinator's actions paused at, by kind.",
      labelNames: ["kind"],
      registers,
    });
    this.answers = new Counter({
      name: "action_service_challenge_answers_total",
      help: "Challenge answers that resumed an action, counted by the coordinator that recorded them, by kind and by who answered (inbox, totp, person, agent).",
      labelNames: ["kind", "answered_by"],
      registers,
    });
    this.healthChecks = new Counter({
      name: "action_service_health_checks_total",
      help: "Account health checks this coordinator ended, by what they found.",
      labelNames: ["outcome"],
      registers,
    });
  }
}

/** What the scrape-time gauges read: the runner's slots, the browser pool, and counts from the store. */
export interface GaugeSources {
  /** Actions queued in the store (every coordinator's queue; health checks left out). */
  queuedActions(): Promise<number>;
  /** Webhook deliveries not yet sent (shared by every coordinator). */
  pendingDeliveries(): Promise<number>;
  /** Run slots doing browser work in this process. */
  runSlotsInUse(): number;
  /** Transactions the store's database refused and this process ran again. */
  retriedTransactions(): number;
  /** Pages this process holds for actions at needs_input. */
  pausedPages(): number;
  /** Per browser endpoint, this process's contexts and pages on it. */
  browserUsage(): readonly { endpoint: string; contexts: number; pages: number }[];
}

/** Registers the gauges, each read when Prometheus scrapes (nothing is kept up to date between scrapes). */
export function registerGauges(registry: Registry, sources: GaugeSources): void {
  const registers = [registry];
  new Gauge({
    name: "action_service_queued_actions",
    help: "Actions queued in the store, waiting for a run slot or their pace (shared by every coordinator; health checks left out).",
    registers,
    async collect() {
      this.set(await sources.queuedActions());
    },
  });
  new Gauge({
    name: "action_service_run_slots_in_use",
    help: "Run slots (ACTION_SERVICE_MAX_CONCURRENT_ACTIONS) doing browser work on this coordinator.",
    registers,
    collect() {
      this.set(sources.runSlotsInUse());
    },
  });
  new Gauge({
    name: "action_service_paused_pages",
    help: "Pages this coordinator holds for actions paused at needs_input (bounded by ACTION_SERVICE_MAX_PAUSED_ACTIONS).",
    registers,
    collect() {
      this.set(sources.pausedPages());
    },
  });
  const usage = (): ReturnType<GaugeSources["browserUsage"]> => sources.browserUsage();
  new Gauge({
    name: "action_service_browser_contexts",
    help: "Account browser contexts this coordinator has open, per browser endpoint (named without credentials or query).",
    labelNames: ["endpoint"],
    registers,
    collect() {
      this.reset();
      for (const { endpoint, contexts } of usage()) this.inc({ endpoint }, contexts);
    },
  });
  new Gauge({
    name: "action_service_browser_pages",
    help: "Pages open in this coordinator's account contexts, per browser endpoint (kept pages and pages held at needs_input included).",
    labelNames: ["endpoint"],
    registers,
    collect() {
      this.reset();
      for (const { endpoint, pages } of usage()) this.inc({ endpoint }, pages);
    },
  });
  new Counter({
    name: "action_service_store_retried_transactions_total",
    help: "Transactions PostgreSQL refused (a serialization failure, a deadlock, a lock not available) that this coordinator ran again; always 0 on SQLite.",
    registers,
    collect() {
      this.reset();
      this.inc(sources.retriedTransactions());
    },
  });
  new Gauge({
    name: "action_service_webhook_pending_deliveries",
    help: "Webhook deliveries not yet sent: the backlog shared by every coordinator.",
    registers,
    async collect() {
      this.set(await sources.pendingDeliveries());
    },
  });
}
