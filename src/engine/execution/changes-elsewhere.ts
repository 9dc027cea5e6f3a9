import type { Store } from "../../store/index.js";
import type { ActionRecord } from "../../store/records.js";
import { changeKey, type Lifecycle } from "./lifecycle.js";

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
  /** Action id → the record last announced, here or from elsewhere (its `changeKey`). */
  readonly #announced = new Map<string, string>();
  readonly #onOwnChange = (action: ActionRecord): void => this.#remember(action);

  constructor(
    private readonly store: Store,
    private readonly lifecycle: Lifecycle,
  ) {}

  async start(): Promise<void> {
    this.#lastSeq = await this.store.events.maxSeq();
    this.lifecycle.events.on("change", this.#onOwnChange);
    this.#stopFeed = this.store.changes.on(() => void this.look());
  }

  stop(): void {
    this.#stopFeed?.();
    this.lifecycle.events.off("change", this.#onOwnChange);
  }

  /** Announces what other processes changed since the last look (one look at a time; once more if asked meanwhile). Resolves when the look under way is done. */
  look(): Promise<void> {
    if (this.#looking) {
      this.#lookAgain = true;
      return this.#looking;
    }
    this.#looking = this.#look()
      .catch(() => undefined) // A busy or closing database: the next look tries again from the same place.
      .finally(() => {
        this.#looking = undefined;
        if (this.#lookAgain) {
          this.#lookAgain = false;
          void this.look();
        }
      });
    return this.#looking;
  }

  async #look(): Promise<void> {
    for (;;) {
      const changed = await this.store.events.actionsChangedAfter(this.#lastSeq, BATCH);
      if (changed.length === 0) return;
      this.#lastSeq = changed.at(-1)!.seq;
      for (const id of new Set(changed.map((change) => change.actionId))) {
        const action = await this.store.actions.get(id);
        // This process's own change, read before its commit's reply came back, is announced as its own.
        if (action && this.#announced.get(id) !== changeKey(action) && !this.lifecycle.isCommitting(action)) this.lifecycle.events.emit("change", action, "elsewhere");
      }
      if (changed.length < BATCH) return;
    }
  }

  #remember(action: ActionRecord): void {
    this.#announced.delete(action.id);
    this.#announced.set(action.id, changeKey(action));
    if (this.#announced.size > REMEMBERED) this.#announced.delete(this.#announced.keys().next().value!);
  }
}

