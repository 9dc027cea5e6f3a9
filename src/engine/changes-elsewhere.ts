import type { Store } from "../store/index.js";
import type { ActionRecord } from "../store/records.js";
import type { Lifecycle } from "./lifecycle.js";

/** How often another process's commits are looked for (the runner looks for new work as often). */
const LOOK_MS = 100;
/** Changes read per look; more wait for the next one. */
const BATCH = 500;
/** Own changes remembered, so an action changed here is not announced twice. */
const REMEMBERED = 10_000;

/**
 * Announces the status changes other processes make (another `serve`, the stdio `mcp`, the CLI) on
 * the lifecycle's `change` event, as this process's own changes are: waits (`?wait`, `wait_seconds`),
 * MCP resource updates and listen streams then follow an action whichever process moved it. Read
 * from the event outbox (every action change records an `action.updated` event in its transaction),
 * only when SQLite says another connection committed (`data_version`).
 */
export class ChangesElsewhere {
  #lastSeq: number;
  #dataVersion = -1;
  #timer: NodeJS.Timeout | undefined;
  /** Action id → the `updated_at` last announced (here or from elsewhere). */
  readonly #announced = new Map<string, string>();
  readonly #onOwnChange = (action: ActionRecord): void => this.#remember(action);

  constructor(
    private readonly store: Store,
    private readonly lifecycle: Lifecycle,
  ) {
    this.#lastSeq = store.events.maxSeq();
  }

  start(): void {
    this.lifecycle.events.on("change", this.#onOwnChange);
    this.#timer = setInterval(() => this.look(), LOOK_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.lifecycle.events.off("change", this.#onOwnChange);
  }

  /** Announces what other processes changed since the last look. */
  look(): void {
    try {
      const version = this.store.dataVersion();
      if (version === this.#dataVersion) return;
      this.#dataVersion = version;
      for (;;) {
        const changed = this.store.events.actionsChangedAfter(this.#lastSeq, BATCH);
        if (changed.length === 0) return;
        this.#lastSeq = changed.at(-1)!.seq;
        for (const id of new Set(changed.map((change) => change.actionId))) {
          const action = this.store.actions.get(id);
          if (action && this.#announced.get(id) !== action.updated_at) this.lifecycle.events.emit("change", action);
        }
        if (changed.length < BATCH) return;
      }
    } catch {
      // A locked or closing database: the next look tries again from the same place.
    }
  }

  #remember(action: ActionRecord): void {
    this.#announced.delete(action.id);
    this.#announced.set(action.id, action.updated_at);
    if (this.#announced.size > REMEMBERED) this.#announced.delete(this.#announced.keys().next().value!);
  }
}
