import { z } from "zod";
import { CHANNEL_OF, INBOX_CHANNELS, aligned, MAX_CANDIDATES, MAX_UNUSED_MESSAGES, MESSAGE_ANSWERS_WITHIN_MS, MESSAGE_KEPT_MS, findInMessage, type InboxChannel, type MessagePatterns, type MessageSource } from "../../domain/inbox.js";
import type { Principal } from "../../domain/keys.js";
import type { ChallengeKind } from "../../domain/challenges.js";
import type { Candidate } from "../../store/index.js";
import type { AccountRecord, ActionRecord, ChallengeRecord, InboxMessageRecord } from "../../store/records.js";
import { allows, requirePermission, visibleAccount } from "../access/index.js";
import { recordAnswer } from "../actions.js";
import type { EngineCore } from "../core.js";
import { newId } from "../ids.js";

/** The longest message kept: a mail's subject and text, a text message. */
export const MAX_MESSAGE_CHARS = 20_000;

export const PushMessageInput = z.strictObject({
  channel: z.enum(INBOX_CHANNELS).describe("`email` answers an email_code challenge, `sms` an sms_code one."),
  text: z.string().min(1).max(MAX_MESSAGE_CHARS).describe("The message as received: the code or sign-in link is found in it."),
});
export type PushMessage = z.infer<typeof PushMessageInput>;

/** Where an account's inbox receives: its e-mail address (while the SMTP listener is on) and its SMS URL. */
export interface InboxAddresses {
  email?: string;
  sms_url: string;
}

/** A message as admins list it: never its text. */
export type ListedMessage = InboxMessageRecord & { from: string | undefined };

/** A message as it arrives: its channel, how it came, its sender and its text. */
export interface IncomingMessage {
  channel: InboxChannel;
  source: MessageSource;
  from: string | undefined;
  text: string;
  /** Mail only: the domains whose DKIM signature on it verified and aligns with its From (lower-case). */
  authenticated?: readonly string[] | undefined;
}

/** A message just kept, and how many of the account's oldest unused messages it pushed out. */
export type ReceivedMessage = ListedMessage & { dropped: number };

export interface InboxOptions {
  /** `ACTION_SERVICE_MAIL_DOMAIN`: addresses are `<token>@<domain>`. */
  mailDomain: string;
  /** Whether this service's SMTP listener is on (else accounts show no e-mail address). */
  smtpOn: boolean;
}

/**
 * Codes that arrive by themselves (DESIGN §15): each account's inbox receives mails, texts and
 * pushed messages, and answers its own account's waiting `email_code` / `sms_code` challenge with
 * the code (or sign-in link) found in a message when it arrived — once per message, the first to
 * arrive first, only with messages received after the action began running (and at most ten minutes
 * before the challenge began), never more than one wrong code per challenge (DESIGN §15).
 *
 * It answers when a message arrives and whenever an action of this process's or another's pauses
 * (`Lifecycle` change events, which carry other coordinators' changes too): whichever of the two
 * commits last sees both.
 */
export class Inbox {
  constructor(
    private readonly core: EngineCore,
    private readonly options: InboxOptions,
  ) {
    core.lifecycle.events.on("change", (action) => {
      if (action.status !== "needs_input") return;
      this.answerWaiting(action.account_id).catch((error: unknown) => core.logger.warn({ err: error, account_id: action.account_id }, "the inbox could not look at a paused action"));
    });
  }

  get mailDomain(): string {
    return this.options.mailDomain;
  }

  /**
   * Whether a health check may wait (up to a minute) for the inbox to answer a challenge of `kind`
   * on this account (DESIGN §16): an e-mailed code or link (while the SMTP listener is on) or a text,
   * once the inbox has answered one for the account — the platform is known to send there. Any
   * other kind, or an inbox the platform has never used, needs a person.
   */
  async mayAnswer(accountId: string, kind: ChallengeKind): Promise<boolean> {
    if (kind === "email_code" && !this.options.smtpOn) return false;
    if (kind !== "email_code" && kind !== "sms_code") return false;
    return this.core.store.inbox.hasAnswered(accountId, kind);
  }

  /** The addresses an account shows: to admin and operator keys allowed it (never read_only ones). */
  async addressesFor(principal: Principal, account: AccountRecord): Promise<InboxAddresses | undefined> {
    if (principal.role === "read_only" || !allows(principal, account.id)) return undefined;
    const tokens = await this.core.store.inbox.tokens(account.id, this.core.lifecycle.now());
    return {
      ...(this.options.smtpOn ? { email: `${tokens.email}@${this.options.mailDomain}` } : {}),
      sms_url: `${this.core.publicUrl}/inbound/sms/${tokens.sms}`,
    };
  }

  /** New address and SMS URL for the account; the old ones stop working at once. */
  async rotate(principal: Principal, accountId: string): Promise<AccountRecord> {
    requirePermission(principal, "manage_accounts");
    const account = await visibleAccount(this.core.store, principal, accountId);
    await this.core.store.inbox.rotate(account.id, this.core.lifecycle.now());
    return account;
  }

  /** A message a person or agent received elsewhere (REST, MCP `forward_message`). */
  async push(principal: Principal, accountId: string, input: PushMessage): Promise<ReceivedMessage> {
    requirePermission(principal, "act");
    const account = await visibleAccount(this.core.store, principal, accountId);
    return this.receive(account.id, { channel: input.channel, source: "pushed", from: undefined, text: input.text });
  }

  /** The account's messages of the last 24 hours and what each answered, newest first (admins). */
  async list(principal: Principal, accountId: string): Promise<ListedMessage[]> {
    requirePermission(principal, "manage_accounts");
    const account = await visibleAccount(this.core.store, principal, accountId);
    return this.core.store.inbox.list(account.id, this.core.lifecycle.now(), 100);
  }

  /** The account an inbox e-mail address belongs to (any case), if it exists and its domain is ours. */
  async accountOfAddress(address: string): Promise<string | undefined> {
    const at = address.lastIndexOf("@");
    if (at <= 0) return undefined;
    const [local, domain] = [address.slice(0, at).toLowerCase(), address.slice(at + 1).toLowerCase()];
    if (domain !== this.options.mailDomain.toLowerCase() || !/^[0-9a-f]{32}$/.test(local)) return undefined;
    return this.core.store.inbox.accountByEmail(local);
  }

  /** The account an SMS URL's token belongs to. */
  accountOfSmsToken(token: string): Promise<string | undefined> {
    return token.length > 100 ? Promise.resolve(undefined) : this.core.store.inbox.accountBySms(token);
  }

  /**
   * Keeps a message (sealed, 24 h) and answers the account's waiting challenge with it if it can.
   * The message is read here, once: what it holds and whether its sender may have it typed are
   * kept with it. Beyond the newest 100 unused messages of the account, the oldest are dropped.
   */
  async receive(accountId: string, message: IncomingMessage): Promise<ReceivedMessage> {
    const { store } = this.core;
    const now = this.core.lifecycle.clock.now();
    const text = message.text.slice(0, MAX_MESSAGE_CHARS);
    const account = await store.accounts.get(accountId);
    const patterns = this.core.platforms.find((platform) => platform.name === account?.platform)?.inbox;
    const found = findInMessage(text, patterns);
    const record: ListedMessage = {
      id: newId("msg"),
      account_id: accountId,
      channel: message.channel,
      source: message.source,
      received_at: now.toISOString(),
      from: message.from,
      used_for: undefined,
      found: found && ("link" in found ? "link" : "code"),
      may_answer: found !== undefined && senderMayAnswer(message, patterns),
    };
    const answer = found && ("link" in found ? found.link : found.code);
    const expiresAt = new Date(now.getTime() + MESSAGE_KEPT_MS).toISOString();
    const dropped = await store.transaction(() => store.inbox.addMessage({ ...record, text, answer, expires_at: expiresAt }, MAX_UNUSED_MESSAGES));
    if (dropped > 0) this.core.logger.info({ account_id: accountId, dropped }, "the inbox dropped its oldest unused messages");
    // An older message may be the one that answers: this one is used only if it is the one.
    const used = record.may_answer ? await this.answerWaiting(accountId) : undefined;
    return { ...record, used_for: used?.messageId === record.id ? used.actionId : undefined, dropped };
  }

  /**
   * Answers the account's action waiting at an `email_code` or `sms_code` challenge with the first
   * unused message of that channel that may answer it: which message answered which action, when
   * one did.
   */
  async answerWaiting(accountId: string): Promise<{ messageId: string; actionId: string } | undefined> {
    const { store } = this.core;
    for (const action of await store.actions.waitingOf(accountId)) {
      const messageId = await this.#answer(action);
      if (messageId) return { messageId, actionId: action.id };
    }
    return undefined;
  }

  /**
   * The answer a message already received gives `challenge`, just opened by the action's run (in
   * its transaction): the message is used and the challenge recorded as answered by the inbox, so
   * the run types it without pausing at needs_input (DESIGN §15). Undefined when no message has one.
   */
  async answerAtHand(action: ActionRecord, challenge: ChallengeRecord): Promise<string | undefined> {
    const { store } = this.core;
    for (const message of await this.#candidates(action, challenge)) {
      if (!(await store.inbox.use(message.id, action.id))) continue;
      await store.challenges.update(challenge.id, { state: "answered", answered_by: "inbox" }, this.core.lifecycle.now());
      store.afterCommit(() => this.#logAnswered(action, challenge, message));
      return message.answer;
    }
    return undefined;
  }

  /** The id of the message that answered the action's open challenge, if one did. */
  async #answer(action: ActionRecord): Promise<string | undefined> {
    const { store } = this.core;
    const challenge = await store.challenges.latestOf(action.id);
    if (!challenge || challenge.state !== "open") return undefined;
    for (const message of await this.#candidates(action, challenge)) {
      // One transaction: the message is used only if its answer is recorded, and answers one challenge once.
      const answered = await store.transaction(async () => {
        if (!(await store.inbox.use(message.id, action.id))) return false;
        if (await recordAnswer(this.core, action.id, challenge.id, message.answer, "inbox")) return true;
        throw new NotWaiting();
      }).catch((error: unknown) => {
        if (error instanceof NotWaiting) return false;
        throw error;
      });
      if (!answered) return undefined;
      this.#logAnswered(action, challenge, message);
      await this.core.runner.deliver(action.id);
      return message.id;
    }
    return undefined;
  }

  /**
   * The first unused messages of the challenge's channel that may answer it, oldest first: received
   * after the action began running and at most ten minutes before the challenge began. None once
   * the inbox has had a code refused on it (the challenge is a person's then).
   */
  async #candidates(action: ActionRecord, challenge: ChallengeRecord): Promise<Candidate[]> {
    const channel = CHANNEL_OF[challenge.kind];
    if (!channel || challenge.inbox_closed_at !== undefined) return [];
    const windowStart = new Date(Date.parse(challenge.created_at) - MESSAGE_ANSWERS_WITHIN_MS).toISOString();
    const from = action.started_at !== undefined && action.started_at > windowStart ? action.started_at : windowStart;
    return this.core.store.inbox.candidates(action.account_id, channel, from, this.core.lifecycle.now(), MAX_CANDIDATES);
  }

  #logAnswered(action: ActionRecord, challenge: ChallengeRecord, message: Candidate): void {
    this.core.logger.info({ action_id: action.id, message_id: message.id, channel: CHANNEL_OF[challenge.kind] }, "answered a challenge from the inbox");
  }
}

/** The challenge moved on while a message was being used: the transaction is undone, the message stays unused. */
class NotWaiting extends Error {}

/**
 * Whether a message's sender may have what it holds typed (DESIGN §15). Where the platform declares
 * the domains it mails from, mail received by the listener answers only when a DKIM signature that
 * verified and aligns with its From also aligns with one of them; a texted or pushed message is
 * not mail a stranger forged under the platform's name (the SMS URL and an API key are credentials).
 */
function senderMayAnswer(message: IncomingMessage, patterns: MessagePatterns | undefined): boolean {
  const senders = patterns?.senders;
  if (!senders || senders.length === 0 || message.channel !== "email" || message.source !== "smtp") return true;
  return (message.authenticated ?? []).some((domain) => senders.some((sender) => aligned(domain.toLowerCase(), sender.toLowerCase())));
}
