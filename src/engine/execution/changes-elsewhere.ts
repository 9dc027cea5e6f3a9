import { OUTBOX_START, actionChange, type Change, type EventCursor, type Store } from "../../store/index.js";
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
 *
 * Its place in the outbox moves over final events only (repositories/events.ts): one a transaction
 * still running may yet be placed before is read again at the next look. Those are announced at
 * once all the same (a member stalled in a transaction holds the place back, not the fleet's
 * waits), each once: `#early` remembers them until the place moves over them.
 *
 * On PostgreSQL a notification says what changed and who wrote it (migrations/postgres 011): it
 * looks only when the change concerns something this process follows (`Lifecycle.follows`: an
 * action someone here waits on or subscribes to, a workspace someone here follows) or an action it
 * runs, never for its own commits (they were announced as they committed), and announces only
 * those. A call without a notification (the feed listened again after a gap, its slow poll), and
 * every call on SQLite (one machine, no payloads), looks as before; SQLite announces every change.
 */
export class ChangesElsewhere {
  #cursor: EventCursor = OUTBOX_START;
  /** The `seq` of changes announced before they were final. */
  readonly #early = new Set<number>();
  #stopFeed: (() => void) | undefined;
  #looking: Promise<void> | undefined;
  #lookAgain = false;
  /** Action id → the record last announced, here or from elsewhere (its `changeKey`). */
  readonly #announced = new Map<string, string>();
  /** Actions a notification said were runs of this process when it came: announced from the outbox though the run has ended here since. */
  readonly #ranHere = new Set<string>();
  readonly #onOwnChange = (action: ActionRecord): void => this.#remember(action);
  /** Only what is followed or run here is read and announced (PostgreSQL); everything (SQLite). */
  readonly #routed: boolean;
  #lookSoon = false;

  constructor(
    private readonly store: Store,
    private readonly lifecycle: Lifecycle,
    /** Whether the action is one of this process's runs (`runnerId`: the runner a notification says holds it). */
    private readonly runsHere: (actionId: string, runnerId?: string) => boolean = () => false,
  ) {
    this.#routed = store.dialect === "postgres";
  }

  async start(): Promise<void> {
    this.#cursor = (await this.store.events.newest())?.cursor ?? OUTBOX_START;
    this.lifecycle.events.on("change", this.#onOwnChange);
    this.#stopFeed = this.store.changes.on((change) => this.#changed(change));
  }

  stop(): void {
    this.#stopFeed?.();
    this.lifecycle.events.off("change", this.#onOwnChange);
  }

  #changed(change: Change | undefined): void {
    if (change !== undefined && (change.origin === this.store.origin || !this.#concerns(change.subject))) return;
    // The notifications of one commit (its action's, its challenge's, its event's) arrive together: one look for all.
    if (this.#lookSoon) return;
    this.#lookSoon = true;
    setImmediate(() => {
      this.#lookSoon = false;
      void this.look();
    });
  }

  /** Whether a notification's subject is a change someone here follows. */
  #concerns(subject: string): boolean {
    const action = actionChange(subject);
    if (!action) return subject.startsWith("event:") && this.lifecycle.follows.followsWorkspace(subject.slice("event:".length));
    if (this.lifecycle.follows.followsAction(action.actionId)) return true;
    // A queued action's notification names the runner its account is warm on (migrations/postgres
    // 015), which is to claim it, not one that runs it: its claim is announced here as it commits.
    if (!this.runsHere(action.actionId, action.status === "queued" ? undefined : action.runnerId)) return false;
    // Remembered: by the time the outbox is read the run may have ended here (the same change stopped it).
    this.#ranHere.add(action.actionId);
    if (this.#ranHere.size > REMEMBERED) this.#ranHere.delete(this.#ranHere.values().next().value!);
    return true;
  }

  /** Whether a change read from the outbox is announced here. */
  #wanted(actionId: string, workspaceId: string): boolean {
    return !this.#routed || this.lifecycle.follows.follows(actionId, workspaceId) || this.runsHere(actionId) || this.#ranHere.has(actionId);
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
    let from = this.#cursor;
    for (let allFinal = true; ; ) {
      const read = await this.store.events.actionsChangedAfter(from, BATCH);
      if (read.length === 0) return;
      from = read.at(-1)!.cursor;
      const changed: string[] = [];
      for (const change of read) {
        allFinal &&= change.final;
        if (allFinal) this.#cursor = change.cursor;
        // Announced once: while it was not final (not again at every look till then), or now.
        if (change.final ? this.#early.delete(change.cursor.seq) : this.#early.has(change.cursor.seq)) continue;
        if (!change.final) this.#early.add(change.cursor.seq);
        if (this.#wanted(change.actionId, change.workspaceId)) changed.push(change.actionId);
      }
      for (const id of new Set(changed)) {
        const action = await this.store.actions.get(id);
        // This process's own change, read before its commit's reply came back, is announced as its own.
        if (action && this.#announced.get(id) !== changeKey(action) && !this.lifecycle.isCommitting(action)) this.lifecycle.events.emit("change", action, "elsewhere");
      }
      if (read.length < BATCH) return;
    }
  }

  #remember(action: ActionRecord): void {
    this.#announced.delete(action.id);
    this.#announced.set(action.id, changeKey(action));
    if (this.#announced.size > REMEMBERED) this.#announced.delete(this.#announced.keys().next().value!);
  }
}

