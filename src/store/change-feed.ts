import pg from "pg";
import type { Db } from "./adapters/sqlite-file.js";

/** Called when other processes may have committed: answers, cancels, new actions, events. */
export type ChangeListener = () => void;

/**
 * Wake-ups for what other processes commit (DESIGN §11). On SQLite, one machine: SQLite's
 * `data_version`, looked at every `LOOK_MS` while someone listens (it changes only when another
 * connection commits, and costs one read). On PostgreSQL, any machine: `LISTEN` on the channel
 * the database's triggers notify (`migrations/postgres`), no polling; a lost connection is
 * reopened, and listeners are called then, since notifications may have been missed meanwhile.
 */
export interface ChangeFeed {
  on(listener: ChangeListener): () => void;
  close(): Promise<void>;
}

export const CHANGES_CHANNEL = "action_service_changes";

abstract class Listeners {
  readonly #listeners = new Set<ChangeListener>();

  on(listener: ChangeListener): () => void {
    this.#listeners.add(listener);
    if (this.#listeners.size === 1) this.started();
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.stopped();
    };
  }

  protected call(): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener();
      } catch {
        // A listener's failure is its own: the others still hear of the change.
      }
    }
  }

  protected abstract started(): void;
  protected abstract stopped(): void;
  abstract close(): Promise<void>;
}

/** How often SQLite's `data_version` is looked at while someone listens. */
const LOOK_MS = 100;

export class SqliteChangeFeed extends Listeners implements ChangeFeed {
  #timer: NodeJS.Timeout | undefined;
  #version = -1;

  constructor(private readonly connection: Db) {
    super();
  }

  protected started(): void {
    this.#timer = setInterval(() => this.#look(), LOOK_MS);
    this.#timer.unref();
  }

  protected stopped(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #look(): void {
    let version: number;
    try {
      version = this.connection.pragma("data_version", { simple: true }) as number;
    } catch {
      return; // closing, or locked: the next look tries again
    }
    if (version === this.#version) return;
    this.#version = version;
    this.call();
  }

  async close(): Promise<void> {
    this.stopped();
  }
}

const RECONNECT_MS = 500;

export class PostgresChangeFeed extends Listeners implements ChangeFeed {
  #client: pg.Client | undefined;
  #closed = false;
  #reconnect: NodeJS.Timeout | undefined;

  constructor(private readonly url: string) {
    super();
  }

  protected started(): void {
    void this.#connect();
  }

  protected stopped(): void {
    // Kept listening: a connection is cheap, and the next listener hears at once.
  }

  async #connect(): Promise<void> {
    if (this.#closed || this.#client) return;
    const client = new pg.Client({ connectionString: this.url });
    this.#client = client;
    const retry = (): void => {
      if (this.#client !== client) return;
      this.#client = undefined;
      client.removeAllListeners();
      void client.end().catch(() => undefined);
      if (this.#closed) return;
      this.#reconnect = setTimeout(() => void this.#connect(), RECONNECT_MS);
      this.#reconnect.unref();
    };
    client.on("error", retry);
    client.on("end", retry);
    client.on("notification", () => this.call());
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGES_CHANNEL}`);
      // What was committed while nobody listened is looked for once.
      this.call();
    } catch {
      retry();
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#reconnect);
    const client = this.#client;
    this.#client = undefined;
    client?.removeAllListeners();
    await client?.end().catch(() => undefined);
  }
}
