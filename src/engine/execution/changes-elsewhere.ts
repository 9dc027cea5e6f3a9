import type { Store } from "../../store/index.js";
import type { ActionRecord } from "../../store/records.js";
import type { Lifecycle } from "./lifecycle.js";

/** Changes read per look; more wait for the next one. */
const BATCH = 500;
/** Own changes remembered, so an action changed here is not announced twice. */
const REMEMBERED = 10_000;

/**
 * Announces the status changes other processes make (another `serve`, the stdio `mcp`, the CLI) on
 * the lifecycle's `change` event, as this process's own changes are: waits (`?wait`, `wait_seconds`),
 * MCP resource updates and listen streams then follow an action whichever process moved it. Read
 * from the event outbox (every action change records an `action.updated` event in its transaction),
 * when the store's change feed says another process committed.
 */
export class ChangesElsewhere {
  #lastSeq = 0;
  #stopFeed: (() => void) | undefined;
  #looking: Promise<void> | undefined;
  #lookAgain = false;
  /** Action id → the version last announced, here or from elsewhere (see `version`). */
  readonly #announced = new Map<string, string>();
  readonly #onOwnChange = (action: ActionRecord): void => this.#remember(action);

  constructor(
    private readonly store: Store,
    private readonly lifecycle: Lifecycle,
  ) {}

  async start(): Promise<void> {
    this.#lastSeq = await this.store.events.maxSeq();
    this.lifecycle.events.on("change", this.#onOwnChange);
    this.#stopFeed = this.store.changes.on(() => this.look());
  }

  stop(): void {
    this.#stopFeed?.();
    this.lifecycle.events.off("change", this.#onOwnChange);
  }

  /** Announces what other processes changed since the last look (one look at a time; once more if asked meanwhile). */
  look(): void {
    if (this.#looking) {
      this.#lookAgain = true;
      return;
    }
    this.#looking = this.#look()
      .catch(() => undefined) // A busy or closing database: the next look tries again from the same place.
      .finally(() => {
        this.#looking = undefined;
        if (this.#lookAgain) {
          this.#lookAgain = false;
          this.look();
        }
      });
  }

  async #look(): Promise<void> {
    for (;;) {
      const changed = await this.store.events.actionsChangedAfter(this.#lastSeq, BATCH);
      if (changed.length === 0) return;
      this.#lastSeq = changed.at(-1)!.seq;
      for (const id of new Set(changed.map((change) => change.actionId))) {
        const action = await this.store.actions.get(id);
        if (action && this.#announced.get(id) !== version(action)) this.lifecycle.events.emit("change", action, "elsewhere");
      }
      if (changed.length < BATCH) return;
    }
  }

  #remember(action: ActionRecord): void {
    this.#announced.delete(action.id);
    this.#announced.set(action.id, version(action));
    if (this.#announced.size > REMEMBERED) this.#announced.delete(this.#announced.keys().next().value!);
  }
}

/**
 * What tells two announcements of an action apart: its status with the time it was changed. The
 * time alone is not enough: two changes can carry the same millisecond (two machines, or one clock
 * that has not moved), and a wait would miss the second.
 */
function version(action: ActionRecord): string {
  return `${action.status}@${action.updated_at}`;
}
