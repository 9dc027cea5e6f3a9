import { randomBytes } from "node:crypto";
import type { InboxChannel, MessageSource } from "../../domain/inbox.js";
import type { Sealer } from "../crypto.js";
import { randomToken, sha256 } from "../crypto.js";
import type { Queries } from "../queries.js";
import type { InboxMessageRecord } from "../records.js";
import { orUndefined } from "../records.js";

/** An account's inbox tokens: the e-mail address's local part and the SMS URL's last segment. */
export interface InboxTokens {
  email: string;
  sms: string;
}

/** A message that may answer a challenge: what was found in it when it arrived, opened. */
export interface Candidate {
  id: string;
  received_at: string;
  answer: string;
}

/** A message to keep: its sender and text, and what was found in it on arrival. */
export type NewMessage = Omit<InboxMessageRecord, "used_for"> & { from: string | undefined; text: string; expires_at: string; answer: string | undefined };

/** An e-mail token: 128 random bits in lower-case hex (addresses are matched without regard to case). */
function newEmailToken(): string {
  return randomBytes(16).toString("hex");
}

const MESSAGE_COLUMNS = ["id", "account_id", "channel", "source", "received_at", "used_for", "found", "may_answer"] as const;

/**
 * Each account's inbox (DESIGN §15): its tokens, looked up by hash and sealed so the account can
 * show them; the messages it received, sealed (sender and text), until they expire.
 */
export class InboxRepository {
  constructor(
    private readonly q: Queries,
    private readonly sealer: Sealer,
  ) {}

  /** The account's tokens, made on first use (accounts made before the inbox get theirs then). */
  async tokens(accountId: string, now: string): Promise<InboxTokens> {
    const row = await this.q.db.selectFrom("inboxes").select(["email_sealed", "sms_sealed"]).where("account_id", "=", accountId).executeTakeFirst();
    if (row) return { email: this.sealer.open(row.email_sealed, `inbox:${accountId}:email`), sms: this.sealer.open(row.sms_sealed, `inbox:${accountId}:sms`) };
    const tokens = { email: newEmailToken(), sms: randomToken(24) };
    // Two first uses at once: the second insert does nothing, and both read what the first wrote.
    await this.q.db
      .insertInto("inboxes")
      .values({ account_id: accountId, ...this.#columns(accountId, tokens), created_at: now })
      .onConflict((conflict) => conflict.column("account_id").doNothing())
      .execute();
    return this.tokens(accountId, now);
  }

  /** New tokens for both: the old address and URL stop working at once. */
  async rotate(accountId: string, now: string): Promise<InboxTokens> {
    await this.tokens(accountId, now);
    const tokens = { email: newEmailToken(), sms: randomToken(24) };
    await this.q.db.updateTable("inboxes").set(this.#columns(accountId, tokens)).where("account_id", "=", accountId).execute();
    return tokens;
  }

  #columns(accountId: string, tokens: InboxTokens) {
    return {
      email_hash: sha256(tokens.email),
      email_sealed: this.sealer.seal(tokens.email, `inbox:${accountId}:email`),
      sms_hash: sha256(tokens.sms),
      sms_sealed: this.sealer.seal(tokens.sms, `inbox:${accountId}:sms`),
    };
  }

  /** The account (not deleted) whose e-mail token this is (lower-case). */
  accountByEmail(token: string): Promise<string | undefined> {
    return this.#accountBy("email_hash", sha256(token.toLowerCase()));
  }

  /** The account (not deleted) whose SMS token this is. */
  accountBySms(token: string): Promise<string | undefined> {
    return this.#accountBy("sms_hash", sha256(token));
  }

  async #accountBy(column: "email_hash" | "sms_hash", hash: string): Promise<string | undefined> {
    const row = await this.q.db
      .selectFrom("inboxes")
      .innerJoin("accounts", "accounts.id", "inboxes.account_id")
      .select("inboxes.account_id")
      .where(`inboxes.${column}`, "=", hash)
      .where("accounts.deleted_at", "is", null)
      .executeTakeFirst();
    return row?.account_id;
  }

  /**
   * Keeps a message, then drops the account's oldest unused messages beyond `keepUnused` (a
   * sender cannot fill the store): how many were dropped. Call inside a transaction.
   */
  async addMessage(message: NewMessage, keepUnused: number): Promise<number> {
    const { id, account_id, channel, source, received_at, from, text, expires_at, found, may_answer, answer } = message;
    await this.q.db
      .insertInto("inbox_messages")
      .values({
        id,
        account_id,
        channel,
        source,
        from_sealed: from === undefined ? null : this.sealer.seal(from, `message:${id}:from`),
        body_sealed: this.sealer.seal(text, `message:${id}:body`),
        received_at,
        used_for: null,
        expires_at,
        found: found ?? null,
        may_answer: may_answer ? 1 : 0,
        answer_sealed: may_answer && answer !== undefined ? this.sealer.seal(answer, `message:${id}:answer`) : null,
      })
      .execute();
    const beyond = await this.q.db
      .selectFrom("inbox_messages")
      .select("id")
      .where("account_id", "=", account_id)
      .where("used_for", "is", null)
      .orderBy("received_at", "desc")
      .orderBy("id", "desc")
      .offset(keepUnused)
      .limit(1_000)
      .execute();
    if (beyond.length === 0) return 0;
    const result = await this.q.db
      .deleteFrom("inbox_messages")
      .where("id", "in", beyond.map((row) => row.id))
      .where("used_for", "is", null)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /**
   * The first `limit` unused messages of a channel that may answer, received at `from` or later and
   * not expired, oldest first (the first to arrive wins), with their answers opened.
   */
  async candidates(accountId: string, channel: InboxChannel, from: string, now: string, limit: number): Promise<Candidate[]> {
    const rows = await this.q.db
      .selectFrom("inbox_messages")
      .select(["id", "received_at", "answer_sealed"])
      .where("account_id", "=", accountId)
      .where("channel", "=", channel)
      .where("may_answer", "=", 1)
      .where("used_for", "is", null)
      .where("received_at", ">=", from)
      .where("expires_at", ">", now)
      .orderBy("received_at", "asc")
      .orderBy("id", "asc")
      .limit(limit)
      .execute();
    return rows.flatMap((row) => (row.answer_sealed ? [{ id: row.id, received_at: row.received_at, answer: this.sealer.open(row.answer_sealed, `message:${row.id}:answer`) }] : []));
  }

  /** Marks a message used for an action; false when it already answered one (each message once). */
  async use(id: string, actionId: string): Promise<boolean> {
    const result = await this.q.db.updateTable("inbox_messages").set({ used_for: actionId }).where("id", "=", id).where("used_for", "is", null).executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /** An account's messages not yet expired, newest first, with their senders (for admins). */
  async list(accountId: string, now: string, limit: number): Promise<(InboxMessageRecord & { from: string | undefined })[]> {
    const rows = await this.q.db
      .selectFrom("inbox_messages")
      .select([...MESSAGE_COLUMNS, "from_sealed"])
      .where("account_id", "=", accountId)
      .where("expires_at", ">", now)
      .orderBy("received_at", "desc")
      .orderBy("id", "desc")
      .limit(limit)
      .execute();
    return rows.map(({ from_sealed, ...row }) => ({
      ...row,
      channel: row.channel as InboxChannel,
      source: row.source as MessageSource,
      used_for: orUndefined(row.used_for),
      found: (row.found ?? undefined) as InboxMessageRecord["found"],
      may_answer: row.may_answer === 1,
      from: from_sealed ? this.sealer.open(from_sealed, `message:${row.id}:from`) : undefined,
    }));
  }

  /** Whether the inbox has answered a challenge of `kind` on one of the account's actions. */
  async hasAnswered(accountId: string, kind: string): Promise<boolean> {
    const row = await this.q.db
      .selectFrom("challenges as c")
      .innerJoin("actions as a", "a.id", "c.action_id")
      .select("c.id")
      .where("a.account_id", "=", accountId)
      .where("c.kind", "=", kind)
      .where("c.answered_by", "=", "inbox")
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Deletes expired messages; returns how many. */
  async deleteExpired(now: string): Promise<number> {
    const result = await this.q.db.deleteFrom("inbox_messages").where("expires_at", "<=", now).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
