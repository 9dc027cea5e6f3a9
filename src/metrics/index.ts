import { Registry } from "prom-client";
import type { EndpointUsage } from "../browser/pool.js";
import type { Engine } from "../engine/engine.js";
import type { ChangeOrigin } from "../engine/execution/index.js";
import type { Logger } from "../engine/logger.js";
import type { ActionRecord } from "../store/records.js";
import { ActionWatch } from "./action-watch.js";
import { ActionSeries, registerGauges } from "./series.js";

export interface MetricsOptions {
  engine: Engine;
  /** The browser pool whose contexts and pages are counted per endpoint. */
  pool: { usage(): EndpointUsage[] };
  /** The `coordinator` label on every series, read at each scrape (the internal URL is known only once listening). */
  coordinator: () => string;
  logger: Logger;
}

/**
 * This coordinator's Prometheus registry (DESIGN §16, docs/metrics.md): counters and histograms
 * moved by the lifecycle's changes, gauges read from the runner, the browser pool and the store
 * when scraped. Every process has its own; each series carries the `coordinator` label.
 */
export class ServiceMetrics {
  readonly #registry = new Registry();
  readonly #watch: ActionWatch;
  readonly #stopWatching: () => void;

  constructor(private readonly options: MetricsOptions) {
    const { core } = options.engine;
    const watch = (this.#watch = new ActionWatch(new ActionSeries(this.#registry), {
      runnerId: () => core.runner.runnerId,
      latestChallenge: (actionId) => core.store.challenges.latestOf(actionId),
    }));
    const onChange = (action: ActionRecord, origin: ChangeOrigin): void => {
      // A listener's throw would reach the code that committed the change: metrics never break an action.
      try {
        watch.observe(action, origin);
      } catch (error) {
        options.logger.warn({ err: error, action_id: action.id }, "metrics could not count an action change");
      }
    };
    core.lifecycle.events.on("change", onChange);
    this.#stopWatching = () => core.lifecycle.events.off("change", onChange);
    registerGauges(this.#registry, {
      queuedActions: () => core.store.actions.queuedCount(),
      pendingDeliveries: () => core.store.webhooks.pendingCount(),
      runSlotsInUse: () => core.runner.activeCount - core.runner.pausedCount,
      pausedPages: () => core.runner.pausedCount,
      retriedTransactions: () => core.store.retriedTransactions,
      browserUsage: () => options.pool.usage(),
    });
  }

  /** The Prometheus text format's media type, version included. */
  get contentType(): string {
    return this.#registry.contentType;
  }

  /** Every series as Prometheus text, the gauges read now, every change told before the scrape counted. */
  async render(): Promise<string> {
    await this.#watch.settled();
    this.#registry.setDefaultLabels({ coordinator: this.options.coordinator() });
    return this.#registry.metrics();
  }

  close(): void {
    this.#stopWatching();
  }
}
