import { randomBytes } from "node:crypto";
import { Socket } from "node:net";
import pg from "pg";
import type { Db } from "./adapters/sqlite-file.js";

/**
 * What a notification says changed (PostgreSQL only): `subject` names it (`action:<id>`,
 * `event:<workspace id>`, `delivery`, `account:<id>`; migrations/postgres), `origin` the store that
 * committed it (`Store.origin`, carried as the connection's `application_name`), when it was an
 * action-service store.
 */
export interface Change {
  subject: string;
  origin: string | undefined;
}

/**
 * Called when other processes may have committed: answers, cancels, new actions, events. With a
 * `change` when a notification said what changed; without one when anything may have (SQLite's
 * `data_version` moved, the feed listened again after a gap, the slow poll): every follower reads.
 */
export type ChangeListener = (change?: Change) => void;

/** The `application_name` every store connection announces: `action-service/<origin>`. */
const ORIGIN_PREFIX = "action-service/";

/** The connection setting that makes the triggers name `origin` as the writer of what it commits. */
export function applicationName(origin: string): string {
  return `${ORIGIN_PREFIX}${origin}`;
}

/** A store's `origin`: random, short enough for `application_name` (63 bytes). */
export function newOrigin(): string {
  return randomBytes(8).toString("hex");
}

/** A notification's payload, `<subject>|<application_name>` (migrations/postgres 010), read back. */
export function parseChange(payload: string): Change {
  const bar = payload.lastIndexOf("|");
  if (bar === -1) return { subject: payload, origin: undefined };
  const application = payload.slice(bar + 1);
  return { subject: payload.slice(0, bar), origin: application.startsWith(ORIGIN_PREFIX) ? application.slice(ORIGIN_PREFIX.length) : undefined };
}

/** What an `action:` subject says (migrations/postgres 011): the action, its status, and the runner holding it (none: undefined). */
export interface ActionChange {
  actionId: string;
  status: string | undefined;
  runnerId: string | undefined;
}

/** The action a subject `action:<id>:<status>:<runner_id>` names (an older `action:<id>` names only the action); undefined for other subjects. */
export function actionChange(subject: string): ActionChange | undefined {
  if (!subject.startsWith("action:")) return undefined;
  const [, actionId = "", status = "", ...runner] = subject.split(":");
  const runnerId = runner.join(":");
  return { actionId, status: status || undefined, runnerId: runnerId || undefined };
}

/** The subject of queued work its writer could not take itself (`Store.wakeClaimers`): any coordinator with a free run slot may claim it. */
export const QUEUED_SUBJECT = "queued";

/**
 * Wake-ups for what other processes commit (DESIGN §11). On SQLite, one machine: SQLite's
 * `data_version`, looked at every `LOOK_MS` while someone listens (it changes only when another
 * connection commits, and costs one read). On PostgreSQL, any machine: `LISTEN` on the channel
 * the database's triggers notify (`migrations/postgres`); a lost connection is reopened, and
 * listeners are called then, since notifications may have been missed meanwhile. A connection that
 * dies without a word is found by a periodic ping, and listeners are also called without a
 * notification — every few seconds while the feed cannot listen, now and then while it does (a slow
 * poll) — so a dead feed costs seconds, never a follower's timeout.
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

  protected call(change?: Change): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(change);
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

/** How the PostgreSQL feed checks that it is alive (defaults: `FEED_TIMING`). */
export interface FeedTiming {
  /** A `SELECT 1` on the LISTEN connection this often while someone listens. */
  pingEveryMs: number;
  /** A ping unanswered this long: the connection is dropped and opened again. */
  pingTimeoutMs: number;
  /** While the feed is not listening (its connection down or reopening), listeners are called this often: every follower reads again. */
  fallbackEveryMs: number;
  /** While it listens, they are still called this long after the last call, notification or not (a backstop). */
  listeningFallbackEveryMs: number;
}

/**
 * A LISTEN connection dead without a word is noticed within ping + timeout (≤ 8 s) and opened
 * again, and the listeners are called then; while it cannot listen, they are called every 5 s. Idle
 * cost: one ping every 5 s on the LISTEN connection, and the followers' reads every 30 s.
 */
export const FEED_TIMING: FeedTiming = { pingEveryMs: 5_000, pingTimeoutMs: 3_000, fallbackEveryMs: 5_000, listeningFallbackEveryMs: 30_000 };

/** TCP keep-alive on PostgreSQL connections: the kernel probes an idle one after this long. */
export const KEEP_ALIVE_AFTER_MS = 10_000;

export class PostgresChangeFeed extends Listeners implements ChangeFeed {
  #client: pg.Client | undefined;
  /** The LISTEN connection's socket, destroyed to drop a connection that no longer answers. */
  #socket: Socket | undefined;
  #closed = false;
  #reconnect: NodeJS.Timeout | undefined;
  #ticker: NodeJS.Timeout | undefined;
  /** Connected and listening: pings are sent only then. */
  #listening = false;
  #pinging = false;
  #lastCall = 0;
  /** `performance.now()` when the newest answered ping was sent; none since the connection opened: never. */
  #heardUpTo = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly url: string,
    private readonly timing: FeedTiming = FEED_TIMING,
  ) {
    super();
  }

  protected override call(change?: Change): void {
    this.#lastCall = Date.now();
    super.call(change);
  }

  /**
   * Up to when (`performance.now()`) every change committed has been heard: when the newest ping
   * answered on the LISTEN connection was sent — PostgreSQL sends a listening session the
   * notifications it received before its answer, so those committed before the ping were heard
   * first. Minus infinity while the feed is not listening (its connection down, reopening, or never
   * answered): it may have missed anything. What a follower kept longer than it can vouch for (a key
   * that may have been revoked) is let go or read again: a notification it missed was for it.
   * `confirm()` asks for a newer answer.
   */
  get heardUpTo(): number {
    return this.#listening ? this.#heardUpTo : Number.NEGATIVE_INFINITY;
  }

  /** Sends a ping now unless one is under way: `heardUpTo` moves on once it is answered. */
  confirm(): void {
    void this.#ping();
  }

  protected started(): void {
    void this.#connect();
    this.#lastCall = Date.now();
    this.#ticker ??= setInterval(() => this.#tick(), Math.min(this.timing.pingEveryMs, this.timing.fallbackEveryMs));
    this.#ticker.unref();
  }

  protected stopped(): void {
    // Kept listening: a connection is cheap, and the next listener hears at once. The pings and
    // the slow poll stop: nobody would hear them.
    clearInterval(this.#ticker);
    this.#ticker = undefined;
  }

  #tick(): void {
    const fallback = this.#listening ? this.timing.listeningFallbackEveryMs : this.timing.fallbackEveryMs;
    if (Date.now() - this.#lastCall >= fallback) this.call();
    void this.#ping();
  }

  /** `SELECT 1` with a deadline: a connection that does not answer is dropped (and opened again). */
  async #ping(): Promise<void> {
    const client = this.#client;
    if (!client || this.#pinging || !this.#listening) return;
    this.#pinging = true;
    const sentAt = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), this.timing.pingTimeoutMs)));
    try {
      const answer = await Promise.race([client.query("SELECT 1").then(() => "answered" as const), late]);
      if (answer === "answered" && this.#client === client) this.#heardUpTo = Math.max(this.#heardUpTo, sentAt);
      if (answer === "late" && this.#client === client) this.#socket?.destroy(new Error(`the LISTEN connection did not answer a ping within ${this.timing.pingTimeoutMs} ms`));
    } catch {
      // A failed ping: the connection's own error event reopens it.
    } finally {
      clearTimeout(timer);
      this.#pinging = false;
    }
  }

  async #connect(): Promise<void> {
    if (this.#closed || this.#client) return;
    const socket = new Socket();
    const client = new pg.Client({ connectionString: this.url, keepAlive: true, keepAliveInitialDelayMillis: KEEP_ALIVE_AFTER_MS, connectionTimeoutMillis: this.timing.pingTimeoutMs * 2, stream: () => socket });
    this.#client = client;
    this.#socket = socket;
    this.#listening = false;
    const retry = (): void => {
      if (this.#client !== client) return;
      this.#client = undefined;
      this.#socket = undefined;
      this.#listening = false;
      this.#heardUpTo = Number.NEGATIVE_INFINITY;
      client.removeAllListeners();
      // Whatever the client still does with it ends with an error nobody waits for.
      client.on("error", () => undefined);
      socket.destroy();
      if (this.#closed) return;
      this.#reconnect = setTimeout(() => void this.#connect(), RECONNECT_MS);
      this.#reconnect.unref();
    };
    client.on("error", retry);
    client.on("end", retry);
    client.on("notification", (message) => this.call(message.payload === undefined ? undefined : parseChange(message.payload)));
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGES_CHANNEL}`);
      this.#listening = true;
      // What was committed while nobody listened (or while a dead connection heard nothing) is looked for once.
      this.call();
    } catch {
      retry();
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#reconnect);
    clearInterval(this.#ticker);
    this.#ticker = undefined;
    const client = this.#client;
    const socket = this.#socket;
    this.#client = undefined;
    this.#socket = undefined;
    if (!client) return;
    client.removeAllListeners();
    client.on("error", () => undefined);
    // An orderly goodbye, but no waiting without end for a server that no longer answers.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([client.end().catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, this.timing.pingTimeoutMs)))]);
    clearTimeout(timer);
    socket?.destroy();
  }
}
