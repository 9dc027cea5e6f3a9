import { randomBytes } from "node:crypto";
import { networkCause, sleep } from "../chaos/kill-support.js";
import type { Fleet } from "./fleet.js";

/** One post a client asked for, and what it was told. */
export interface Tracked {
  n: number;
  text: string;
  key: string | undefined;
  account: { handle: string; id: string };
  /** The members the create went to, in order (a retry goes to the next one given). */
  via: string[];
  sentAt: number;
  /** When a member answered the create with an id (the action is acknowledged). */
  ackAt?: number;
  id?: string;
  /** When the client saw it terminal. */
  endedAt?: number;
  final?: any;
  /** Why the client has no id: the last answer or connection error. */
  unanswered?: string;
  /** Each request of the create: the member, how long it took, what came of it. */
  attempts: { via: string; ms: number; outcome: string }[];
}

export const TERMINAL = new Set(["succeeded", "failed", "canceled"]);

export interface CreateOptions {
  account: { handle: string; id: string };
  /** Members tried in turn: the first, then the next on a retry. */
  via: string[];
  keyed?: boolean;
  /** The same key as an earlier request (a client's retry of it). */
  key?: string;
  text?: string;
  /** One request's bound: a client that hears nothing for this long gives up on it (and, keyed, retries). */
  requestTimeoutMs?: number;
  /** A keyed create is retried (409 in flight, 5xx, a broken connection) until this moment. */
  retryUntil?: number;
}

/** Clients posting through the fleet's REST API, as programs would: what each was told is kept for the verdict. */
export class Clients {
  readonly posts: Tracked[] = [];
  readonly #run = randomBytes(3).toString("hex");

  constructor(private readonly fleet: Fleet) {}

  /** Creates a post (`?wait=0`); resolves once some member answered it with an id, or the client gave up. */
  async create(options: CreateOptions): Promise<Tracked> {
    const n = this.posts.length;
    const key = options.key ?? (options.keyed ? `fault-${this.#run}-${n}` : undefined);
    const text = options.text ?? `fault ${this.#run} #${n} ${randomBytes(3).toString("hex")}`;
    const tracked: Tracked = { n, text, key, account: options.account, via: [], sentAt: Date.now(), attempts: [] };
    this.posts.push(tracked);
    const retryUntil = options.retryUntil ?? Date.now() + 60_000;
    for (let attempt = 0; ; attempt++) {
      const member = this.fleet.member(options.via[attempt % options.via.length]!);
      tracked.via.push(member.label);
      const sent = Date.now();
      const note = (outcome: string): void => void tracked.attempts.push({ via: member.label, ms: Date.now() - sent, outcome });
      try {
        const response = await fetch(`${member.url}/v1/actions?wait=0`, {
          method: "POST",
          headers: this.fleet.headers(key ? { "idempotency-key": key } : {}),
          body: JSON.stringify({ account_id: options.account.id, type: "post", params: { text } }),
          signal: AbortSignal.timeout(options.requestTimeoutMs ?? 120_000),
        });
        const json: any = await response.json().catch(() => ({}));
        note(`${response.status}${json?.error?.code ? ` ${json.error.code}` : ""}`);
        if (response.status === 200 || response.status === 202 || response.status === 201) {
          tracked.id = json.id;
          tracked.ackAt = Date.now();
          tracked.unanswered = undefined;
          if (TERMINAL.has(json.status)) this.#ended(tracked, json);
          return tracked;
        }
        tracked.unanswered = `${member.label} answered ${response.status} ${JSON.stringify(json).slice(0, 300)}`;
        if (!key || (response.status !== 409 && response.status < 500)) return tracked;
      } catch (error) {
        note(networkCause(error));
        tracked.unanswered = `${member.label}: ${networkCause(error)}`;
        // Without a key, a request that may have arrived is not sent again: the client cannot know.
        if (!key && networkCause(error) !== "ECONNREFUSED") return tracked;
      }
      if (Date.now() > retryUntil) return tracked;
      if (!options.via.some((label) => this.fleet.member(label).alive())) {
        tracked.unanswered = `no coordinator of ${options.via.join(", ")} is up`;
        return tracked;
      }
      await sleep(500);
    }
  }

  /** Follows a post with `GET ?wait=30` through `via` in turn until it is terminal, `deadline` passes, or `going()` says stop. */
  async follow(tracked: Tracked, via: string[], deadline: number, going: () => boolean = () => true): Promise<void> {
    const up = (): boolean => via.some((label) => this.fleet.member(label).alive());
    for (let turn = 0; tracked.id && !tracked.final && Date.now() < deadline && up() && going(); turn++) {
      const member = this.fleet.member(via[turn % via.length]!);
      try {
        const response = await fetch(`${member.url}/v1/actions/${tracked.id}?wait=30`, { headers: this.fleet.headers(), signal: AbortSignal.timeout(60_000) });
        const json: any = await response.json().catch(() => ({}));
        if (response.status === 200 && TERMINAL.has(json.status)) this.#ended(tracked, json);
        else if (response.status !== 200) await sleep(250);
      } catch {
        await sleep(250);
      }
    }
  }

  /**
   * One worker per account, each creating a post through `via` (in turn) and following it to its
   * end, again and again until `running()` says stop. A post still open then is the verdict's to
   * settle (`judge`), within its own bound: one that never ends is reported, not waited for.
   */
  async load(accounts: { handle: string; id: string }[], via: string[], running: () => boolean): Promise<void> {
    await Promise.all(
      accounts.map(async (account, worker) => {
        for (let turn = worker; running(); turn++) {
          const order = via.map((_, i) => via[(turn + i) % via.length]!);
          const tracked = await this.create({ account, via: order, keyed: true, retryUntil: Date.now() + 120_000 });
          if (!tracked.id && !order.some((label) => this.fleet.member(label).alive())) return;
          await this.follow(tracked, order, Date.now() + 180_000, running);
        }
      }),
    );
  }

  /**
   * One post per account, followed to its end: each account signed in before a measure starts. The
   * accounts are spread over the coordinators (the first through the first, the next through the
   * next): a coordinator runs what is created through it when it can, and an account's later actions
   * stay where it is warm (DESIGN §11), so each coordinator holds work during the measure.
   */
  async signIn(accounts: { handle: string; id: string }[], via: string[]): Promise<void> {
    await Promise.all(
      accounts.map(async (account, index) => {
        const order = via.map((_, i) => via[(index + i) % via.length]!);
        return this.follow(await this.create({ account, via: order, keyed: true }), order, Date.now() + 120_000);
      }),
    );
  }

  /**
   * An account warm on `label`: one of `accounts` whose last action ran there, or else a new one
   * signed in through `label` alone. Under load another coordinator may claim an account's first
   * post before the one it was created through does, and an account's later actions stay where it
   * is warm (DESIGN §11): a measure that needs `label` to hold work must not leave that to chance.
   */
  async warmOn(accounts: { handle: string; id: string }[], label: string): Promise<{ handle: string; id: string }> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const ids = accounts.map((account) => `'${account.id.replaceAll("'", "''")}'`).join(", ");
      const rows = await this.fleet.store.all<{ account_id: string; runner_id: string | null }>(
        `SELECT DISTINCT ON (account_id) account_id, runner_id FROM actions WHERE account_id IN (${ids}) ORDER BY account_id, created_at DESC, id DESC`,
      );
      const warm = rows.find((row) => row.runner_id !== null && this.fleet.runners.get(row.runner_id) === label);
      if (warm) return accounts.find((account) => account.id === warm.account_id)!;
      const [fresh] = await this.fleet.accounts(1);
      await this.follow(await this.create({ account: fresh!, via: [label], keyed: true }), [label], Date.now() + 120_000);
      // The fleet reads the runners table every 200 ms: the new action's runner is known by then.
      await sleep(400);
      accounts = [fresh!];
    }
    throw new Error(`no account warm on ${label} after 5 sign-ins through it`);
  }

  /** Posts acknowledged (the client holds an id). */
  get acknowledged(): Tracked[] {
    return this.posts.filter((tracked) => tracked.id);
  }

  /** Posts that ended (as the client saw) between `from` and `to`. */
  endedBetween(from: number, to: number): number {
    return this.posts.filter((tracked) => tracked.endedAt !== undefined && tracked.endedAt >= from && tracked.endedAt < to).length;
  }

  #ended(tracked: Tracked, json: any): void {
    tracked.final = json;
    tracked.endedAt = Date.now();
  }
}
